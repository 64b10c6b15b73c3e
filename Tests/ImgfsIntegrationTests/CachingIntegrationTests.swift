import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 3 through a real mount: the memory and disk caches, expiry and revalidation, policies, rm and ls.
@Suite("Caches", .serialized, .enabled(if: FuseAvailability.available))
struct CachingIntegrationTests {
    /// A cache directory that outlives one mount.
    final class SharedCache {
        let path = "/tmp/imgfs-cache-\(getpid())-\(UUID().uuidString.prefix(8))"
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    private func serve(_ images: [[UInt8]], on origin: TestOrigin, prefix: String = "/img") -> [String] {
        images.enumerated().map { index, body in
            origin.route("\(prefix)\(index).jpg", .ok(body, contentType: "image/jpeg"))
            return "\(origin.baseURL)\(prefix)\(index).jpg"
        }
    }

    @Test("the memory cache stays within its budget under a stream of images larger than it")
    func memoryBudget() throws {
        let images = try Fixtures.wallpapers(maximumSize: 1 << 20, count: 10)
        try withMountedOrigin(["--memory-limit", "2M"]) { origin, mount in
            let urls = serve(images, on: origin)
            for (url, body) in zip(urls, images) {
                #expect(PosixFile.read(mount.path(url)) == .success(body))
                let memory = mount.statistics()["repository.memory_bytes"] ?? -1
                #expect(memory >= 0 && memory <= Double(2 << 20), "memory cache holds \(memory) bytes")
            }
            #expect(images.reduce(0) { $0 + $1.count } > 3 * (2 << 20), "the stream is larger than the budget")
            #expect((mount.statistics()["repository.memory.evictions"] ?? 0) > 0)
        }
    }

    @Test("a purge (SIGUSR1, imgfs purge) empties the memory cache while an open reader still gets correct bytes")
    func purgeWhileReading() throws {
        let image = try Fixtures.largeJPEG()
        try withMountedOrigin { origin, mount in
            origin.route("/big.jpg", .ok(image, contentType: "image/jpeg"))
            let handle = try #require(FileHandle(forReadingAtPath: mount.path(origin.baseURL + "/big.jpg")))
            defer { try? handle.close() }
            var bytes = [UInt8](try handle.read(upToCount: 64 * 1024) ?? Data())
            #expect(mount.waitForStatistics { ($0["repository.memory_bytes"] ?? 0) >= Double(image.count) })
            mount.process.signal(SIGUSR1)
            #expect(
                mount.waitForStatistics { $0["repository.memory.purges"] == 1 && $0["repository.memory_bytes"] == 0 })
            bytes += [UInt8](try handle.readToEnd() ?? Data())
            #expect(bytes.count == image.count && bytes == image)
            #expect(mount.log.contains("memory purged (SIGUSR1)"))
            let purge = try ChildProcess.run(MountedImgfs.binary, ["purge", mount.mountPoint])
            #expect(purge.status == 0, "\(purge.output)")
            #expect(mount.waitForStatistics { $0["repository.memory.purges"] == 2 })
            #expect(mount.log.contains("memory purged (imgfs purge --memory)"))
        }
    }

    @Test("after an unmount, and after kill -9, a remount serves every image from disk with the origin stopped")
    func persistence() throws {
        for killed in [false, true] {
            let cache = SharedCache()
            let origin = try TestOrigin()
            let images = try Fixtures.smallPNGs(5) + [Fixtures.largeJPEG()]
            let urls = serve(images, on: origin)
            let first = try MountedImgfs(cacheDirectory: cache.path)
            for (url, body) in zip(urls, images) { #expect(PosixFile.read(first.path(url)) == .success(body)) }
            #expect(first.waitForStatistics { $0["repository.disk_entries"] == Double(images.count) })
            if killed {
                first.process.kill9AndReap()
            }
            first.stop()
            #expect(origin.totalRequests == images.count)
            origin.stop()
            let second = try MountedImgfs(cacheDirectory: cache.path)
            defer { second.stop() }
            for (url, body) in zip(urls, images) {
                #expect(PosixFile.size(second.path(url)) == .success(body.count), "stat without the network")
                #expect(
                    PosixFile.read(second.path(url)) == .success(body),
                    "read back after \(killed ? "kill -9" : "unmount")")
            }
        }
    }

    @Test("an unmount right after reading waits for the queued disk writes: every image read is there after a remount")
    func unmountFlushesDiskWrites() throws {
        let cache = SharedCache()
        let origin = try TestOrigin()
        let icons = try Fixtures.smallPNGs(20)
        origin.route(prefix: "/many/") { request in
            let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
            return .ok(icons[index % icons.count], contentType: "image/png")
        }
        let urls = (0..<300).map { "\(origin.baseURL)/many/\($0)" }
        let first = try MountedImgfs(cacheDirectory: cache.path)
        let results = ParallelThreads.run(urls.count) { PosixFile.read(first.path(urls[$0])) }
        #expect(results.enumerated().allSatisfy { $0.element == .success(icons[$0.offset % icons.count]) })
        #expect(first.stop() == 0, "unmounted at once, no waiting for the disk")
        origin.stop()
        let second = try MountedImgfs(cacheDirectory: cache.path)
        defer { second.stop() }
        let again = ParallelThreads.run(urls.count) { PosixFile.read(second.path(urls[$0])) }
        let missing = again.filter { (try? $0.get()) == nil }.count
        #expect(missing == 0, "\(missing) of \(urls.count) images were not on disk after the unmount")
    }

    @Test("a flipped byte or a truncated file in the disk cache is detected and the image fetched again")
    func corruption() throws {
        let cache = SharedCache()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        let url = serve([image], on: origin)[0]
        for damage in ["flip", "truncate"] {
            let first = try MountedImgfs(cacheDirectory: cache.path)
            #expect(PosixFile.read(first.path(url)) == .success(image))
            #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
            first.stop()
            let body = try #require(Self.largestFile(under: cache.path))
            var bytes = [UInt8](FileManager.default.contents(atPath: body) ?? Data())
            #expect(bytes.count == image.count, "the body file of the entry")
            if damage == "flip" { bytes[bytes.count / 2] ^= 0xff } else { bytes.removeLast(1000) }
            try Data(bytes).write(to: URL(fileURLWithPath: body))
            let requestsBefore = origin.totalRequests
            let second = try MountedImgfs(cacheDirectory: cache.path)
            #expect(PosixFile.read(second.path(url)) == .success(image), "after a \(damage)")
            #expect(origin.totalRequests == requestsBefore + 1, "fetched again after a \(damage)")
            #expect(
                second.log.contains("disk cache entry unusable") || second.log.contains("disk cache: removed entry"),
                "the log says the damaged entry was dropped")
            second.stop()
        }
    }

    @Test(
        "an expired image is revalidated with If-None-Match, a 304 has no body; stale-if-error when the origin is down"
    )
    func revalidation() throws {
        let origin = try TestOrigin()
        let image = try Fixtures.mediumJPEG()
        origin.route(prefix: "/tagged.jpg") { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return OriginResponse(status: 304, headers: [("ETag", "\"v1\"")])
            }
            var response = OriginResponse.ok(image, contentType: "image/jpeg")
            response.headers.append(("ETag", "\"v1\""))
            return response
        }
        let mount = try MountedImgfs(arguments: ["--expire", "1s"])
        defer { mount.stop() }
        let file = mount.path(origin.baseURL + "/tagged.jpg")
        #expect(PosixFile.read(file) == .success(image))
        Poll.elapse(1.3)  // past the 1 s expiry
        #expect(PosixFile.read(file) == .success(image))
        #expect(origin.requestCount("/tagged.jpg") == 2)
        #expect(origin.requests().last?.header("If-None-Match") == "\"v1\"")
        #expect(origin.bodyBytesSent("/tagged.jpg") == image.count, "the 304 carried no body")
        #expect(mount.statistics()["repository.counters.not_modified"] == 1)
        Poll.elapse(1.3)  // past the 1 s expiry
        origin.stop()
        #expect(PosixFile.read(file) == .success(image), "served stale while the origin is down")
        #expect(mount.log.contains("stale-if-error"))
    }

    @Test(
        "a refresh that brings different bytes of the same size reaches readers: the kernel's cached pages are dropped")
    func changedContentInvalidatesPageCache() throws {
        let image = ChangingImage(try Fixtures.mediumJPEG())
        let (first, second) = (image.first, image.second)
        try withMountedOrigin(["--expire", "1s"]) { origin, mount in
            image.route(on: origin, at: "/changing.jpg")
            let file = mount.path(origin.baseURL + "/changing.jpg")
            #expect(PosixFile.read(file) == .success(first))
            #expect(PosixFile.read(file) == .success(first), "a reread within the expiry")
            image.change()
            Poll.elapse(1.3)  // past the 1 s expiry
            #expect(PosixFile.read(file) == .success(second), "the new bytes, not the kernel's cached pages")
            // Logged as the change is filed, which may finish a moment after the read that found it.
            #expect(Poll.until(timeout: 5) { mount.log.contains("invalidating the kernel's cached pages") })
        }
    }

    @Test("with --cache-control, max-age=0 is revalidated on every open and no-store never reaches the disk")
    func cacheControl() throws {
        let image = try Fixtures.mediumJPEG()
        var unstored = OriginResponse.ok(image, contentType: "image/jpeg")
        unstored.headers.append(("Cache-Control", "no-store"))
        try withMountedOrigin(["--cache-control"]) { origin, mount in
            origin.route(prefix: "/zero.jpg") { request in
                if request.header("If-None-Match") == "\"z\"" { return OriginResponse(status: 304) }
                var response = OriginResponse.ok(image, contentType: "image/jpeg")
                response.headers += [("ETag", "\"z\""), ("Cache-Control", "max-age=0")]
                return response
            }
            origin.route("/private.jpg", unstored)
            // A response serves the opens of the next second (one program's lookup, open and reads); after that, every
            // open revalidates.
            for _ in 0..<3 {
                #expect(PosixFile.read(mount.path(origin.baseURL + "/zero.jpg")) == .success(image))
                #expect(PosixFile.read(mount.path(origin.baseURL + "/private.jpg")) == .success(image))
                Poll.elapse(1.1)  // past the expiry
            }
            #expect(origin.requestCount("/zero.jpg") == 3)
            #expect(origin.bodyBytesSent("/zero.jpg") == image.count, "two 304s without a body")
            #expect(origin.requestCount("/private.jpg") == 3, "no-store is fetched again on every open")
            #expect(
                mount.waitForStatistics { $0["repository.disk_entries"] == 1 }, "only the max-age=0 image is on disk")
        }
    }

    @Test("writing 3× the disk cap leaves the cache under the cap, keeping the most recently used")
    func diskCap() throws {
        let images = try Fixtures.wallpapers(maximumSize: 1 << 20, count: 10)
        let cap = 3 << 20
        #expect(images.reduce(0) { $0 + $1.count } >= 2 * cap)
        try withMountedOrigin(["--disk-limit", "3M", "--memory-limit", "1M"]) { origin, mount in
            let urls = serve(images, on: origin)
            for (url, body) in zip(urls, images) {
                #expect(PosixFile.read(mount.path(url)) == .success(body))
                #expect(
                    mount.waitForStatistics {
                        ($0["repository.counters.transfers"] ?? 0) >= 1 && ($0["repository.in_flight"] ?? 1) == 0
                    })
            }
            // Disk writes run in the background: wait until every image was written (and kept or evicted since).
            #expect(
                mount.waitForStatistics {
                    ($0["repository.disk_entries"] ?? 0) + ($0["repository.disk_evictions"] ?? 0)
                        >= Double(images.count)
                })
            let onDisk = Self.bytesOfFiles(under: mount.cacheDirectory + "/v1")
            #expect(onDisk <= cap + 64 * 1024, "\(onDisk) bytes on disk")
            #expect(
                mount.waitForStatistics {
                    ($0["repository.disk_entries"] ?? 0) >= 1
                        && ($0["repository.disk_bytes"] ?? .infinity) <= Double(cap)
                })
            let listed = Set(try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/img"))
            #expect(listed.contains(NameCodec.encode(urls.last!)), "the most recent image is kept")
            #expect(!listed.contains(NameCodec.encode(urls.first!)), "the oldest was evicted")
        }
    }

    @Test("rm evicts, ls lists what is cached, and cache-only never contacts the origin")
    func rmLsAndCacheOnly() throws {
        let cache = SharedCache()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let icons = try Fixtures.smallPNGs(3)
        let urls = serve(icons, on: origin)
        do {
            let cold = try MountedImgfs(arguments: ["--policy", "cache-only"], cacheDirectory: cache.path)
            defer { cold.stop() }
            #expect(PosixFile.read(cold.path(urls[0])) == .failure(Errno(ENOENT)))
            #expect(origin.totalRequests == 0)
        }
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            for (url, icon) in zip(urls, icons) { #expect(PosixFile.read(mount.path(url)) == .success(icon)) }
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 3 })
            let listed = try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/img").sorted()
            #expect(listed == urls.map { NameCodec.encode($0) }.sorted())
            #expect(unlink(mount.path(urls[1])) == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/img").count == 2)
            #expect(PosixFile.read(mount.path(urls[1])) == .success(icons[1]))
            #expect(origin.requestCount("/img1.jpg") == 2, "fetched again after rm")
        }
        let before = origin.totalRequests
        let offline = try MountedImgfs(arguments: ["--policy", "cache-only"], cacheDirectory: cache.path)
        defer { offline.stop() }
        for (url, icon) in zip(urls, icons) { #expect(PosixFile.read(offline.path(url)) == .success(icon)) }
        #expect(origin.totalRequests == before, "cache-only served from disk with no request")
    }

    // MARK: - Helpers

    static func largestFile(under root: String) -> String? {
        let files = (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).map {
            "\(root)/\($0)"
        }
        return files.max { size($0) < size($1) }
    }

    static func bytesOfFiles(under root: String) -> Int {
        (FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []).reduce(0) {
            $0 + size("\(root)/\($1)")
        }
    }

    static func size(_ path: String) -> Int {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return 0 }
        return Int(status.st_size)
    }
}
