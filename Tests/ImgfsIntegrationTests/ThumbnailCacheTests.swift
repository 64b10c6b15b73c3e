import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// The variants' counters in `.imgfs/stats.json` and `.imgfs/metrics`, and their disk cache's expiry and size cap,
/// through a real mount and real libvips.
@Suite("Thumbnail counters and disk cache", .serialized, .enabled(if: FuseAvailability.available))
struct ThumbnailCacheTests {
    @Test("stats.json and metrics count variants made, reads from memory and disk, failures by reason, decode time")
    func counters() throws {
        let images = try ThumbnailImages()
        let origin = try TestOrigin()
        defer { origin.stop() }
        try images.sh("convert -size 1600x1200 plasma:fractal -quality 90 noise.jpg")
        let noise = try images.bytes("noise.jpg")
        origin.route("/noise.jpg", .ok(noise, contentType: "image/jpeg"))
        origin.route("/cut.jpg", .ok(Array(noise.prefix(noise.count / 2)), contentType: "image/jpeg"))
        origin.route("/bomb.png", .ok(try images.bomb(), contentType: "image/png"))
        let cache = "/tmp/imgfs-thumb-stats-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let url = origin.baseURL + "/noise.jpg"
        let first = try MountedImgfs(cacheDirectory: cache)
        let made = try PosixFile.read(first.thumbnail(256, url)).get()
        #expect(PosixFile.read(first.thumbnail(256, origin.baseURL + "/cut.jpg")).map(\.count) == .failure(Errno(EIO)))
        #expect(
            PosixFile.read(first.thumbnail(256, origin.baseURL + "/bomb.png")).map(\.count) == .failure(Errno(EFBIG)))
        #expect(
            PosixFile.read(first.thumbnail(256, origin.baseURL + "/missing.jpg")).map(\.count)
                == .failure(Errno(ENOENT)))
        // Read again: from the kernel's page cache or the variants' memory cache, never made again.
        #expect(PosixFile.read(first.thumbnail(256, url)) == .success(made))
        #expect(PosixFile.read(first.thumbnail(128, url)).map(\.count).map { $0 > 0 } == .success(true))
        let stats = first.statistics()
        #expect(stats["variants.made"] == 2, "\(stats.filter { $0.key.hasPrefix("variants") })")
        #expect((stats["variants.served_from_memory"] ?? 0) >= 2)
        #expect(stats["variants.served_from_disk"] == 0)
        #expect(stats["variants.failures.undecodable"] == 1)
        #expect(stats["variants.failures.too_many_pixels"] == 1)
        #expect((stats["variants.failures.original"] ?? 0) >= 1)
        #expect((stats["variants.decode_milliseconds"] ?? 0) >= 1)
        let metrics = String(decoding: try PosixFile.read("\(first.mountPoint)/.imgfs/metrics").get(), as: UTF8.self)
        #expect(metrics.contains("imgfs_variants_made_total 2"))
        #expect(metrics.contains("imgfs_variants_failures_total{reason=\"too_many_pixels\"} 1"))
        first.stop()
        // Remounted: the variant comes from the disk cache, nothing is decoded.
        let second = try MountedImgfs(cacheDirectory: cache)
        defer { second.stop() }
        #expect(PosixFile.read(second.thumbnail(256, url)) == .success(made))
        let again = second.statistics()
        #expect(again["variants.served_from_disk"] == 1)
        #expect(again["variants.made"] == 0)
        #expect(again["variants.decode_milliseconds"] == 0)
    }

    @Test("the disk sweep (--max-stale) removes expired variants with their originals; fresh ones stay")
    func sweptWithOriginals() throws {
        let images = try ThumbnailImages()
        let origin = try TestOrigin()
        defer { origin.stop() }
        try images.sh("convert -size 400x300 xc:red short.jpg && convert -size 400x300 xc:blue long.jpg")
        var short = OriginResponse.ok(try images.bytes("short.jpg"), contentType: "image/jpeg")
        short.headers.append(("Cache-Control", "max-age=1"))
        var long = OriginResponse.ok(try images.bytes("long.jpg"), contentType: "image/jpeg")
        long.headers.append(("Cache-Control", "max-age=3600"))
        origin.route("/short.jpg", short)
        origin.route("/long.jpg", long)
        let cache = "/tmp/imgfs-thumb-sweep-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let shortURL = origin.baseURL + "/short.jpg"
        let longURL = origin.baseURL + "/long.jpg"
        let first = try MountedImgfs(arguments: ["--cache-control"], cacheDirectory: cache)
        for url in [shortURL, longURL] {
            #expect(PosixFile.read(first.thumbnail(128, url)).map(\.count).map { $0 > 0 } == .success(true))
        }
        first.stop()
        #expect(
            CachingIntegrationTests.bytesOfFiles(under: cache + "/variants") > 0, "the variants were written to disk")
        Poll.elapse(2.2)  // the short one's expiry (1 s) plus --max-stale (1 s) go by
        let second = try MountedImgfs(
            arguments: ["--cache-control", "--max-stale", "1s", "--policy", "cache-only"], cacheDirectory: cache)
        defer { second.stop() }
        // The sweep runs at start.
        #expect(second.waitForStatistics { ($0["variants.disk_evictions"] ?? 0) >= 1 })
        let listed = try FileManager.default.contentsOfDirectory(atPath: "\(second.mountPoint)/thumb/128")
        #expect(listed == [NameCodec.encode(longURL)], "\(listed)")
        #expect(second.waitForLog { $0.contains("disk cache sweep removed 1 expired variants") })
        #expect(PosixFile.read(second.thumbnail(128, shortURL)).map(\.count) == .failure(Errno(ENOENT)))
        #expect(PosixFile.read(second.thumbnail(128, longURL)).map(\.count).map { $0 > 0 } == .success(true))
        #expect(origin.totalRequests == 2, "cache-only: only the first mount's two fetches")
    }

    @Test("imgfs purge --expired removes expired variants from memory and disk; --disk removes them all")
    func purge() throws {
        let images = try ThumbnailImages()
        let origin = try TestOrigin()
        defer { origin.stop() }
        try images.sh("convert -size 400x300 xc:green green.jpg")
        origin.route("/green.jpg", .ok(try images.bytes("green.jpg"), contentType: "image/jpeg"))
        let url = origin.baseURL + "/green.jpg"
        let mount = try MountedImgfs(arguments: ["--expire", "1s"])
        defer { mount.stop() }
        let listing = { try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/thumb/128") }
        #expect(PosixFile.read(mount.thumbnail(128, url)).map(\.count).map { $0 > 0 } == .success(true))
        #expect(
            mount.waitForStatistics { _ in
                CachingIntegrationTests.bytesOfFiles(under: mount.cacheDirectory + "/variants") > 0
            })
        let purge = { (kind: String) in
            try ChildProcess.run(MountedImgfs.binary, ["purge", "--\(kind)", mount.mountPoint]).status
        }
        #expect(try purge("expired") == 0)
        #expect(try listing() == [NameCodec.encode(url)], "not expired yet")
        Poll.elapse(1.2)  // past the 1 s expiry
        #expect(try purge("expired") == 0)
        #expect(try listing().isEmpty)
        #expect(mount.statistics()["variants.disk_evictions"] == 1)
        #expect(PosixFile.read(mount.thumbnail(128, url)).map(\.count).map { $0 > 0 } == .success(true))
        #expect(try listing() == [NameCodec.encode(url)])
        #expect(try purge("disk") == 0)
        #expect(try listing().isEmpty)
    }

    @Test("--disk-limit covers images and variants: the variants keep to their eighth, least recently used out")
    func sizeCap() throws {
        let images = try ThumbnailImages()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let count = 6
        try images.sh(
            (0..<count).map { "convert -size 1200x900 plasma:fractal -quality 95 p\($0).jpg" }.joined(separator: " && ")
        )
        var urls: [String] = []
        for index in 0..<count {
            origin.route("/p\(index).jpg", .ok(try images.bytes("p\(index).jpg"), contentType: "image/jpeg"))
            urls.append(origin.baseURL + "/p\(index).jpg")
        }
        let limit = 2 << 20
        let mount = try MountedImgfs(arguments: ["--disk-limit", "2M"])
        defer { mount.stop() }
        var made = 0
        for url in urls {
            made += try PosixFile.read(mount.thumbnail(1024, url)).get().count
        }
        #expect(made > limit / 8 * 2, "the variants together need more than their share (\(made) bytes)")
        // Disk writes run in the background (one may be under way): once they are done the cap holds.
        #expect(mount.waitForStatistics { ($0["variants.disk_evictions"] ?? 0) >= 1 })
        let cap = limit / 8 + 16 * 1024  // bodies, plus their small records
        var variants = 0
        #expect(
            Poll.until {
                variants = CachingIntegrationTests.bytesOfFiles(under: mount.cacheDirectory + "/variants")
                return variants > 0 && variants <= cap
            }, "\(variants) bytes of variants on disk")
        var total = 0
        #expect(
            Poll.until {
                total = CachingIntegrationTests.bytesOfFiles(under: mount.cacheDirectory)
                return total <= limit + 64 * 1024
            }, "\(total) bytes on disk in all")
    }
}
