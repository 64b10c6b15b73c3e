import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 4: kill -9 in the middle of downloads, and a full disk, lose nothing and serve nothing partial.
@Suite("Crashes and full disks", .serialized, .enabled(if: FuseAvailability.available))
struct CrashAndDiskTests {
    @Test(
        "kill -9 during 50 concurrent downloads: after a remount every file is complete and no temporary file survives")
    func killDuringDownloads() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let images = try Fixtures.wallpapers(maximumSize: 1 << 20, count: 10)
        let slow = Slowness()
        origin.route(prefix: "/photo/") { request in
            let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
            var response = OriginResponse.ok(images[index % images.count], contentType: "image/jpeg")
            if slow.on { response.bytesPerSecond = 256 * 1024 }
            return response
        }
        let cache = "/tmp/imgfs-crash-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let urls = (0..<50).map { "\(origin.baseURL)/photo/\($0)" }
        let first = try MountedImgfs(cacheDirectory: cache)
        let readers = try urls.map { try ChildProcess.spawn("/bin/cat", [first.path($0)]) }
        Poll.elapse(1.5)  // a crash in the middle of the downloads: some done, some under way
        first.process.kill9AndReap()
        readers.forEach { $0.kill9AndReap() }
        first.stop()
        slow.on = false
        let second = try MountedImgfs(cacheDirectory: cache)
        defer { second.stop() }
        let results = ParallelThreads.run(urls.count) { index in PosixFile.read(second.path(urls[index])) }
        for (index, result) in results.enumerated() {
            #expect(result == .success(images[index % images.count]), "image \(index) after the crash")
        }
        // Let this mount's own writes finish: their temporary files are not leftovers.
        #expect(second.waitForStatistics { $0["repository.disk_entries"] == Double(urls.count) })
        let leftovers = (FileManager.default.enumerator(atPath: cache)?.allObjects as? [String] ?? []).filter {
            $0.hasSuffix(".tmp")
        }
        #expect(leftovers.isEmpty, "temporary files after the restart's sweep: \(leftovers)")
    }

    @Test("a full disk: imgfs keeps serving from memory and the network, logs ENOSPC once, and keeps nothing partial")
    func fullDisk() throws {
        let images = try Fixtures.wallpapers(maximumSize: 1 << 20, count: 8)
        let tiny = "/tmp/imgfs-tiny-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: tiny, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: tiny) }
        let mounted = try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", tiny])
        try #require(mounted.status == 0, "mounting a 1 MiB tmpfs (needs root): \(mounted.output)")
        defer { _ = try? ChildProcess.run("/bin/umount", ["-l", tiny]) }
        try withMountedOrigin(["--disk-limit", "64M"], cacheDirectory: tiny + "/cache") { origin, mount in
            let urls = images.indices.map { index -> String in
                origin.route("/w\(index).jpg", .ok(images[index], contentType: "image/jpeg"))
                return "\(origin.baseURL)/w\(index).jpg"
            }
            for (url, image) in zip(urls, images) {
                #expect(PosixFile.read(mount.path(url)) == .success(image))
            }
            // The queued writes fill the disk (reported at once) and leave nothing partial behind them.
            let tmpFiles = {
                (FileManager.default.enumerator(atPath: tiny + "/cache/v1")?.allObjects as? [String] ?? [])
                    .filter { $0.hasSuffix(".tmp") }
            }
            #expect(mount.waitForLog { $0.contains("no space left on device") })
            #expect(Poll.until { tmpFiles().isEmpty })
            for (url, image) in zip(urls, images) {
                #expect(PosixFile.read(mount.path(url)) == .success(image), "served again from memory")
            }
            let reports = mount.log.components(separatedBy: "no space left on device").count - 1
            #expect(reports == 1, "ENOSPC logged once, not per image (\(reports))")
            let files = FileManager.default.enumerator(atPath: tiny + "/cache/v1")?.allObjects as? [String] ?? []
            #expect(!files.contains { $0.hasSuffix(".tmp") }, "no partial entry")
            for name in files where name.hasSuffix(".data") {
                let size = CachingIntegrationTests.size("\(tiny)/cache/v1/\(name)")
                #expect(images.contains { $0.count == size }, "every kept body is whole: \(name)")
            }
            for name in files where name.hasSuffix(".entry") {
                // <key>.<crc>.<size>.entry: the body of <size> bytes, then its record.
                let size = Int(name.split(separator: ".").dropLast().last ?? "", radix: 16) ?? -1
                #expect(images.contains { $0.count == size }, "every kept body is whole: \(name)")
                #expect(CachingIntegrationTests.size("\(tiny)/cache/v1/\(name)") > size, "with its record")
            }
        }
    }

    final class Slowness: @unchecked Sendable {
        private let lock = NSLock()
        private var value = true
        var on: Bool {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }
}
