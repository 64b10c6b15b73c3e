import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 14, items 1–4, through a real mount: a body is the origin's whole image or an error, never a part or a mix,
/// and never fetched from a host the policy refuses; a remount with `--policy cache-only` shows nothing partial was
/// kept.
@Suite("Integrity", .serialized, .enabled(if: FuseAvailability.available))
struct IntegrityTests {
    /// A cache directory shared by two mounts, removed at the end.
    final class SharedCache {
        let path = "/tmp/imgfs-integrity-\(getpid())-\(UUID().uuidString.prefix(8))"
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Counts calls, for handlers whose answer changes.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.withLock {
                value += 1; return value
            }
        }
    }

    /// What each URL reads as after a remount of `cache` with `--policy cache-only`.
    private func cacheOnlyReads(_ cache: SharedCache, _ urls: [String]) throws -> [Result<[UInt8], Errno>] {
        let mount = try MountedImgfs(arguments: ["--policy", "cache-only"], cacheDirectory: cache.path)
        defer { mount.stop() }
        return urls.map { PosixFile.read(mount.path($0)) }
    }

    /// `image` with every byte after its first KiB changed: a different image of the same size and signature.
    private func variant(of image: [UInt8]) -> [UInt8] {
        image.enumerated().map { index, byte in index < 1024 ? byte : byte ^ 0x5A }
    }

    @Test("a 206 to a GET without Range is not the whole image: EIO and why, nothing kept")
    func unaskedPartialContent() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        let half = image.count / 2
        origin.route(
            "/half.jpg",
            OriginResponse(
                status: 206,
                headers: [
                    ("Content-Type", "image/jpeg"), ("Content-Range", "bytes 0-\(half - 1)/\(image.count)")
                ], body: Array(image[..<half])))
        let url = origin.baseURL + "/half.jpg"
        let cache = SharedCache()
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EIO)))
            #expect(mount.log.contains("206"), "the log says why")
        }
        #expect(try cacheOnlyReads(cache, [url]) == [.failure(Errno(ENOENT))])
    }

    @Test("a gzip body cut short (its Content-Length matching what was sent) is a failure, never an entry")
    func truncatedGzip() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        let path = "/usr/share/plasma/look-and-feel/org.debian.desktop/contents/previews/fullscreenpreview.jpg"
        let gzip = try ChildProcess.run("/bin/sh", ["-c", "gzip -c \(path) | base64 -w0"])
        let encoded = gzip.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let compressed = [UInt8](Data(base64Encoded: encoded) ?? Data())
        #expect(compressed.count > 1000)
        var whole = OriginResponse.ok(compressed, contentType: "image/jpeg")
        whole.headers.append(("Content-Encoding", "gzip"))
        origin.route("/whole.jpg", whole)
        var cut = whole
        cut.body = Array(compressed.dropLast(40))
        origin.route("/cut.jpg", cut)
        let cache = SharedCache()
        let urls = [origin.baseURL + "/cut.jpg", origin.baseURL + "/whole.jpg"]
        do {
            let mount = try MountedImgfs(arguments: ["--tune", "retries=1"], cacheDirectory: cache.path)
            defer { mount.stop() }
            #expect(PosixFile.read(mount.path(urls[0])) == .failure(Errno(EIO)))
            #expect(PosixFile.read(mount.path(urls[1])) == .success(image), "a whole gzip stream still decodes")
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 1 })
        }
        #expect(try cacheOnlyReads(cache, urls) == [.failure(Errno(ENOENT)), .success(image)])
    }

    @Test("a retry after a broken body never splices two bodies, without validators or with another Last-Modified")
    func noSplice() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let first = try Fixtures.mediumJPEG()
        let second = variant(of: first)
        let spliced = Array(first[..<(first.count / 2)] + second[(first.count / 2)...])
        let validators: [String: [(String, String)]] = [
            "/none.jpg": [],
            "/dated.jpg": [("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")]
        ]
        for (path, headers) in validators {
            let counter = Counter()
            origin.route(prefix: path) { _ in
                if counter.next() == 1 {
                    var response = OriginResponse(
                        status: 200, headers: [("Content-Type", "image/jpeg")] + headers,
                        body: first)
                    response.truncateAfter = first.count / 2
                    return response
                }
                let changed = headers.isEmpty ? [] : [("Last-Modified", "Mon, 07 Nov 1994 08:49:37 GMT")]
                return OriginResponse(status: 200, headers: [("Content-Type", "image/jpeg")] + changed, body: second)
            }
        }
        let cache = SharedCache()
        let urls = validators.keys.sorted().map { origin.baseURL + $0 }
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            for url in urls {
                let read = PosixFile.read(mount.path(url))
                #expect(read != .success(spliced), "never A's first half and B's second half")
                #expect(read == .success(second) || read == .failure(Errno(EIO)), "\(url): B whole, or EIO")
            }
        }
        for read in try cacheOnlyReads(cache, urls) {
            #expect(read == .success(second) || read == .failure(Errno(ENOENT)), "nothing mixed was kept")
        }
    }

    @Test("bytes a reader already had, then another body on the retry: EIO for the reader, nothing kept")
    func changedAfterBytesWereRead() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let first = try Fixtures.mediumJPEG()
        let second = variant(of: first)
        let counter = Counter()
        origin.route(prefix: "/changing.jpg") { _ in
            if counter.next() == 1 {
                var response = OriginResponse.ok(first, contentType: "image/jpeg")
                response.truncateAfter = first.count / 2
                return response
            }
            var response = OriginResponse.ok(second, contentType: "image/jpeg")
            response.headerDelay = 0.3
            return response
        }
        let url = origin.baseURL + "/changing.jpg"
        let cache = SharedCache()
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            let descriptor = open(mount.path(url), O_RDONLY | O_CLOEXEC)
            #expect(descriptor >= 0)
            defer { close(descriptor) }
            var prefix = [UInt8](repeating: 0, count: 4096)
            #expect(prefix.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 4096, 0) } == 4096)
            #expect(prefix == Array(first[..<4096]))
            #expect(PosixFile.readAll(descriptor) == .failure(Errno(EIO)), "the rest is not another image's")
        }
        #expect(try cacheOnlyReads(cache, [url]) == [.failure(Errno(ENOENT))])
    }

    @Test("a retry resumes with Range and If-Range when the ETag proves the same image; the whole image is kept")
    func resumeWithValidator() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        let counter = Counter()
        let headers = [("Content-Type", "image/jpeg"), ("ETag", "\"v1\"")]
        origin.route(prefix: "/resumable.jpg") { request in
            if counter.next() == 1 {
                var response = OriginResponse(status: 200, headers: headers, body: image)
                response.truncateAfter = image.count / 2
                return response
            }
            if let start = OriginResponse.rangeStart(request.header("Range")), request.header("If-Range") == "\"v1\"" {
                return .partial(image, from: start, headers: headers)
            }
            return OriginResponse(status: 200, headers: headers, body: image)
        }
        let url = origin.baseURL + "/resumable.jpg"
        let cache = SharedCache()
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            #expect(PosixFile.read(mount.path(url)) == .success(image))
            let retry = origin.requests().last
            #expect(origin.requestCount("/resumable.jpg") == 2)
            #expect(retry?.header("Range") == "bytes=\(image.count / 2)-")
            #expect(retry?.header("If-Range") == "\"v1\"")
        }
        #expect(try cacheOnlyReads(cache, [url]) == [.success(image)])
    }

    @Test("a 206 that does not continue where the body broke (another start, another total) is EIO, nothing kept")
    func mismatchedContinuation() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        let headers = [("Content-Type", "image/jpeg"), ("ETag", "\"v1\"")]
        for (path, start) in [("/from-zero.jpg", 0), ("/too-far.jpg", image.count / 2 + 10)] {
            let counter = Counter()
            origin.route(prefix: path) { _ in
                if counter.next() == 1 {
                    var response = OriginResponse(status: 200, headers: headers, body: image)
                    response.truncateAfter = image.count / 2
                    return response
                }
                return .partial(image, from: start, headers: headers)
            }
        }
        let urls = ["/from-zero.jpg", "/too-far.jpg"].map { origin.baseURL + $0 }
        let cache = SharedCache()
        do {
            let mount = try MountedImgfs(cacheDirectory: cache.path)
            defer { mount.stop() }
            for url in urls { #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EIO)), "\(url)") }
            #expect(mount.log.contains("the answer to Range bytes="))
        }
        #expect(try cacheOnlyReads(cache, urls) == [.failure(Errno(ENOENT)), .failure(Errno(ENOENT))])
    }

    @Test("--allow-host holds for redirects with userinfo or a URL over 8 KiB: refused before any request")
    func redirectsThatCannotBeParsed() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let icon = try Fixtures.smallPNGs(1)[0]
        origin.route("/icon.png", .ok(icon, contentType: "image/png"))
        let elsewhere = "localhost:\(origin.port)"
        let long = "/long/" + String(repeating: "a", count: 9000) + ".png"
        origin.route(long, .ok(icon, contentType: "image/png"))
        origin.route("/user", .redirect(to: "http://u@\(elsewhere)/icon.png"))
        origin.route("/userpass", .redirect(to: "http://u:p@\(elsewhere)/icon.png"))
        origin.route("/long", .redirect(to: "http://\(elsewhere)\(long)"))
        let urls = ["/user", "/userpass", "/long"].map { origin.baseURL + $0 }
        let cache = SharedCache()
        do {
            let mount = try MountedImgfs(arguments: ["--allow-host", "127.0.0.1"], cacheDirectory: cache.path)
            defer { mount.stop() }
            for url in urls {
                #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EACCES)), "\(url)")
            }
            #expect(origin.requestCount("/icon.png") == 0, "no redirect reached the host that is not allowed")
            #expect(origin.requestCount(long) == 0)
        }
        #expect(try cacheOnlyReads(cache, urls) == Array(repeating: .failure(Errno(ENOENT)), count: 3))
    }
}
