import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Large images served after a remount by the kernel itself from their disk-cache files (FUSE passthrough), each
/// entry's checksum checked once: proven by reading while the daemon is stopped (SIGSTOP) and by the memory cache
/// staying empty.
@Suite("Disk passthrough", .serialized, .enabled(if: FuseAvailability.available))
struct DiskPassthroughTests {
    private let helpers = PassthroughTests()

    /// An image cached on disk: its cache directory, the origin serving it (the test stops it) and its URL.
    private struct Cached {
        let cache = CachingIntegrationTests.SharedCache()
        let origin: TestOrigin
        let url: String
    }

    /// Serves `image` as `name` from a new origin, reads it once through a mount on a new cache directory, waits
    /// until its entry is on disk and unmounts.
    private func cachedOnDisk(_ image: [UInt8], name: String) throws -> Cached {
        let origin = try TestOrigin()
        origin.route("/" + name, .ok(image, contentType: name.hasSuffix(".png") ? "image/png" : "image/jpeg"))
        let cached = Cached(origin: origin, url: origin.baseURL + "/" + name)
        do {
            let first = try MountedImgfs(cacheDirectory: cached.cache.path)
            defer { first.stop() }
            #expect(PosixFile.read(first.path(cached.url)) == .success(image))
            #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
            #expect(first.stop() == 0)
        } catch {
            origin.stop()
            throw error
        }
        return cached
    }

    /// The data file of the only entry in `cache`.
    private func dataFile(in cache: String) throws -> String {
        let names = FileManager.default.enumerator(atPath: cache)?.allObjects as? [String] ?? []
        return try #require(names.first { $0.hasSuffix(".data") }.map { "\(cache)/\($0)" })
    }

    @Test(
        "after a remount, a large cached image is read by the kernel from its disk-cache file, also with imgfs stopped")
    func readsFromTheDiskFile() throws {
        let image = try Fixtures.largeJPEG()
        #expect(image.count > 1 << 20)
        let cached = try cachedOnDisk(image, name: "big.jpg")
        let (cache, origin, url) = (cached.cache, cached.origin, cached.url)
        defer { origin.stop() }
        let mount = try MountedImgfs(cacheDirectory: cache.path)
        defer { mount.stop() }
        do {  // the files are closed before the unmount
            let file = try PassthroughTests.OpenFile(mount.path(url))
            let second = try PassthroughTests.OpenFile(mount.path(url))
            #expect(
                Fixtures.digest(helpers.readWhileStopped(file, mount)) == Fixtures.digest(.success(image)),
                "the read finished without the daemon")
            #expect(Fixtures.digest(second.readAll()) == Fixtures.digest(.success(image)))
            #expect(second.mapped(count: image.count).map(Fixtures.sha256) == Fixtures.sha256(image))
        }
        let statistics = mount.statistics()
        #expect(statistics["repository.memory_bytes"] == 0, "the memory cache did not take the body")
        #expect(statistics["repository.counters.disk_hits"].map { $0 >= 1 } == true, "\(statistics)")
        #expect(origin.totalRequests == 1)
        #expect(mount.stop() == 0, "a clean unmount: no file is left open")
    }

    @Test("a flipped byte in a large disk-cache file is found at the first open after a remount and fetched again")
    func corruptDiskFile() throws {
        let image = try Fixtures.largePNG()
        let cached = try cachedOnDisk(image, name: "big.png")
        let (cache, origin, url) = (cached.cache, cached.origin, cached.url)
        defer { origin.stop() }
        let data = try dataFile(in: cache.path)
        let handle = try #require(FileHandle(forUpdatingAtPath: data))
        try handle.seek(toOffset: UInt64(image.count / 2))
        let byte = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: UInt64(image.count / 2))
        try handle.write(contentsOf: [byte[0] ^ 0xff])
        try handle.close()
        let mount = try MountedImgfs(cacheDirectory: cache.path)
        defer { mount.stop() }
        for _ in 0..<3 {
            #expect(PosixFile.read(mount.path(url)) == .success(image), "the origin's bytes, never the damaged ones")
        }
        #expect(origin.totalRequests == 2, "fetched again once")
        #expect(mount.log.components(separatedBy: "does not match its checksum").count == 2, "detected once")
    }

    @Test("a large image open from its disk-cache file reads to its end after its entry was evicted")
    func evictedWhileOpen() throws {
        let image = try Fixtures.largeJPEG()
        let cached = try cachedOnDisk(image, name: "big.jpg")
        let (cache, origin, url) = (cached.cache, cached.origin, cached.url)
        defer { origin.stop() }
        let mount = try MountedImgfs(cacheDirectory: cache.path)
        defer { mount.stop() }
        do {
            let file = try PassthroughTests.OpenFile(mount.path(url))
            #expect(unlink(mount.path(url)) == 0, "rm evicts the image from both caches")
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 0 })
            let names = FileManager.default.enumerator(atPath: cache.path)?.allObjects as? [String] ?? []
            #expect(!names.contains { $0.hasSuffix(".data") }, "the data file is gone")
            #expect(
                Fixtures.digest(helpers.readWhileStopped(file, mount)) == Fixtures.digest(.success(image)),
                "the open file still reads its image, from the removed file, without the daemon")
        }
        #expect(origin.totalRequests == 1, "nothing fetched again for the open file")
        #expect(mount.stop() == 0)
    }

    @Test("a file open from its disk-cache file keeps its image when a refresh replaces the entry with other bytes")
    func replacedWhileOpen() throws {
        let image = ChangingImage(try Fixtures.largeJPEG())
        let (first, second) = (image.first, image.second)
        let origin = try TestOrigin()
        defer { origin.stop() }
        image.route(on: origin, at: "/changing.jpg")
        let url = origin.baseURL + "/changing.jpg"
        let cache = CachingIntegrationTests.SharedCache()
        do {
            let mount = try MountedImgfs(arguments: ["--expire", "1h"], cacheDirectory: cache.path)
            defer { mount.stop() }
            #expect(PosixFile.read(mount.path(url)) == .success(first))
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 1 })
        }
        let mount = try MountedImgfs(arguments: ["--expire", "1s"], cacheDirectory: cache.path)
        defer { mount.stop() }
        do {
            let old = try PassthroughTests.OpenFile(mount.path(url))  // passthrough to the disk file (fresh enough)
            image.change()
            Poll.elapse(1.3)  // past the 1 s expiry
            let new = try PassthroughTests.OpenFile(mount.path(url))  // revalidated: other bytes replace the entry
            #expect(Fixtures.digest(new.readAll()) == Fixtures.digest(.success(second)), "the new bytes")
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 1 && $0["repository.in_flight"] == 0 })
            #expect(
                Fixtures.digest(helpers.readWhileStopped(old, mount)) == Fixtures.digest(.success(first)),
                "the open file's own image, whole, from the replaced file, without the daemon")
        }
        #expect(origin.totalRequests == 2)
        #expect(mount.stop() == 0)
    }

    @Test("with --tune passthrough=off, a large image after a remount is read through imgfs from its disk-cache file")
    func withoutPassthrough() throws {
        let image = try Fixtures.largeJPEG()
        let cached = try cachedOnDisk(image, name: "big.jpg")
        let (cache, origin, url) = (cached.cache, cached.origin, cached.url)
        defer { origin.stop() }
        let mount = try MountedImgfs(arguments: ["--tune", "passthrough=off"], cacheDirectory: cache.path)
        defer { mount.stop() }
        for _ in 0..<2 { #expect(PosixFile.read(mount.path(url)) == .success(image)) }
        #expect(origin.totalRequests == 1)
        #expect(mount.stop() == 0)
    }
}
