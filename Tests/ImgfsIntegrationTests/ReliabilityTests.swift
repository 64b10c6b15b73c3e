import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 4 through a real mount against the fault-injecting origin: every answer is correct bytes or a clear error.
@Suite("Reliability", .serialized, .enabled(if: FuseAvailability.available))
struct ReliabilityTests {
    /// Counts calls, for handlers that change their answer.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.withLock {
                value += 1; return value
            }
        }
    }

    @Test("5xx, 429 and resets are retried with backoff (the body resumes where it broke); 4xx are not")
    func retries() throws {
        let image = try Fixtures.mediumJPEG()
        let flaky = Counter(), resetting = Counter()
        try withMountedOrigin { origin, mount in
            origin.route(prefix: "/flaky.jpg") { _ in
                switch flaky.next() {
                case 1: return .status(503)
                case 2: return OriginResponse(status: 429, headers: [("Retry-After", "0")])
                default: return .ok(image, contentType: "image/jpeg")
                }
            }
            origin.route(prefix: "/reset.jpg") { _ in
                var response = OriginResponse.ok(image, contentType: "image/jpeg")
                if resetting.next() == 1 { response.resetAfter = image.count / 2 }
                return response
            }
            origin.route("/forbidden.jpg", .status(403))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/flaky.jpg")) == .success(image))
            #expect(origin.requestCount("/flaky.jpg") == 3)
            #expect(PosixFile.read(mount.path(origin.baseURL + "/reset.jpg")) == .success(image))
            #expect(origin.requestCount("/reset.jpg") == 2)
            #expect(PosixFile.read(mount.path(origin.baseURL + "/forbidden.jpg")) == .failure(Errno(EACCES)))
            #expect(origin.requestCount("/forbidden.jpg") == 1)
            #expect(mount.log.contains("retrying in"))
        }
    }

    @Test("a body shorter than its Content-Length, or longer, is never served nor cached: EIO after the retries")
    func truncatedBodies() throws {
        let image = try Fixtures.mediumJPEG()
        var short = OriginResponse.ok(image, contentType: "image/jpeg")
        short.truncateAfter = image.count / 3
        var wrong = OriginResponse.ok(image, contentType: "image/jpeg")
        wrong.contentLength = .override(image.count + 5000)
        try withMountedOrigin(["--tune", "retries=2"]) { origin, mount throws in
            origin.route("/short.jpg", short)
            origin.route("/wrong-length.jpg", wrong)
            #expect(PosixFile.read(mount.path(origin.baseURL + "/short.jpg")) == .failure(Errno(EIO)))
            #expect(origin.requestCount("/short.jpg") == 3, "the first attempt and 2 retries")
            #expect(PosixFile.read(mount.path(origin.baseURL + "/wrong-length.jpg")) == .failure(Errno(EIO)))
            #expect(mount.statistics()["repository.disk_entries"] == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/img").isEmpty)
        }
    }

    @Test("chunked, length-less and gzip-encoded images arrive whole, with their true size")
    func encodings() throws {
        let image = try Fixtures.mediumJPEG()
        var chunked = OriginResponse.ok(image, contentType: "image/jpeg")
        chunked.chunked = true
        var unsized = OriginResponse.ok(image, contentType: "image/jpeg")
        unsized.contentLength = .omitted
        let gzip = try ChildProcess.run(
            "/bin/sh",
            [
                "-c",
                "gzip -c /usr/share/plasma/look-and-feel/org.debian.desktop/contents/previews/fullscreenpreview.jpg "
                    + "| base64 -w0"
            ])
        let compressed = [UInt8](
            Data(base64Encoded: gzip.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? Data())
        #expect(compressed.count > 100 && compressed.count != image.count)
        var encoded = OriginResponse.ok(compressed, contentType: "image/jpeg")
        encoded.headers.append(("Content-Encoding", "gzip"))
        try withMountedOrigin { origin, mount in
            origin.route("/chunked.jpg", chunked)
            origin.route("/unsized.jpg", unsized)
            origin.route("/gzip.jpg", encoded)
            for path in ["/chunked.jpg", "/unsized.jpg", "/gzip.jpg"] {
                #expect(PosixFile.size(mount.path(origin.baseURL + path)) == .success(image.count), "size of \(path)")
                #expect(PosixFile.read(mount.path(origin.baseURL + path)) == .success(image), "bytes of \(path)")
            }
        }
    }

    @Test(
        "only images: HTML, JSON and empty bodies fail with EMEDIUMTYPE and say why; --allow-any-type serves them"
    )
    func onlyImages() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let html = Array("<!DOCTYPE html><html><body>Sorry</body></html>".utf8)
        origin.route("/page.png", .ok(html, contentType: "text/html"))
        origin.route("/data.png", .ok(Array("{\"error\": \"nope\"}".utf8), contentType: "application/json"))
        origin.route("/empty.png", .ok([], contentType: "image/png"))
        do {
            let mount = try MountedImgfs()
            defer { mount.stop() }
            for path in ["/page.png", "/data.png", "/empty.png"] {
                #expect(PosixFile.read(mount.path(origin.baseURL + path)) == .failure(Errno(EMEDIUMTYPE)), "\(path)")
            }
            #expect(mount.log.contains("not an image: the body is HTML"))
            #expect(mount.log.contains("not an image: the body is JSON"))
        }
        let lenient = try MountedImgfs(arguments: ["--allow-any-type"])
        defer { lenient.stop() }
        #expect(PosixFile.read(lenient.path(origin.baseURL + "/page.png")) == .success(html))
    }

    @Test("--max-size: an announced size over the cap fails before any byte, a growing body stops at the cap: EFBIG")
    func sizeCap() throws {
        let image = try Fixtures.largeJPEG()
        var chunked = OriginResponse.ok(image, contentType: "image/jpeg")
        chunked.chunked = true
        chunked.bytesPerSecond = 4 << 20
        try withMountedOrigin(["--max-size", "1M"]) { origin, mount in
            origin.route("/big.jpg", .ok(image, contentType: "image/jpeg"))
            origin.route("/big-chunked.jpg", chunked)
            #expect(PosixFile.read(mount.path(origin.baseURL + "/big.jpg")) == .failure(Errno(EFBIG)))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/big-chunked.jpg")) == .failure(Errno(EFBIG)))
            // Both transfers are called off, so the origin's connections end (or the body runs on: the check fails).
            Poll.until { origin.openConnections == 0 || origin.bodyBytesSent("/big-chunked.jpg") >= 3 << 20 }
            #expect(origin.bodyBytesSent("/big-chunked.jpg") < 3 << 20, "the transfer stopped near the cap")
            #expect(mount.log.contains("over the limit"))
        }
    }

    @Test(
        "redirects: a chain is followed, a loop, file://, ftp:// and gopher:// fail, and a host not allowed is refused")
    func redirects() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin(["--allow-host", "127.0.0.1"]) { origin, mount in
            origin.route("/icon.png", .ok(icon, contentType: "image/png"))
            origin.route("/hop1", .redirect(to: "/hop2"))
            origin.route("/hop2", .redirect(301, to: "/hop3"))
            origin.route("/hop3", .redirect(307, to: origin.baseURL + "/icon.png"))
            origin.route("/loop", .redirect(to: "/loop"))
            origin.route("/file", .redirect(to: "file:///etc/passwd"))
            origin.route("/ftp", .redirect(to: "ftp://127.0.0.1/x.png"))
            origin.route("/gopher", .redirect(to: "gopher://127.0.0.1/x"))
            origin.route("/elsewhere", .redirect(to: "http://localhost:\(origin.port)/icon.png"))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/hop1")) == .success(icon))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/loop")) == .failure(Errno(EIO)))
            #expect(origin.requestCount("/loop") == 11, "the first request and 10 redirects")
            for path in ["/file", "/ftp", "/gopher"] {
                #expect(PosixFile.read(mount.path(origin.baseURL + path)) == .failure(Errno(EIO)), "\(path)")
            }
            let before = origin.requestCount("/icon.png")
            #expect(PosixFile.read(mount.path(origin.baseURL + "/elsewhere")) == .failure(Errno(EACCES)))
            #expect(origin.requestCount("/icon.png") == before, "the redirect to a host not allowed was not followed")
            #expect(PosixFile.read(mount.path("http://localhost:\(origin.port)/icon.png")) == .failure(Errno(EACCES)))
        }
    }

    @Test("--deny-private-networks (and -o allow_other) refuse loopback before any request is sent")
    func privateNetworks() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/icon.png", .ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png"))
        for arguments in [["--deny-private-networks"], ["-o", "allow_other"]] {
            let mount = try MountedImgfs(arguments: arguments)
            defer { mount.stop() }
            #expect(PosixFile.read(mount.path(origin.baseURL + "/icon.png")) == .failure(Errno(EACCES)), "\(arguments)")
            #expect(
                PosixFile.read(mount.path("http://[::ffff:127.0.0.1]:\(origin.port)/icon.png"))
                    == .failure(Errno(EACCES)))
            #expect(mount.log.contains("loopback"))
        }
        #expect(origin.totalRequests == 0)
    }

    @Test(
        "a redirect from a public address to loopback is refused: the check is on the address connected, for every hop")
    func redirectToPrivateAddress() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/icon.png", .ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png"))
        // A "public" host of our own: 198.51.100.2 (TEST-NET-2) in a network namespace this test creates.
        let suffix = String(getpid() % 100_000)
        let namespace = "imgfs\(suffix)", hostSide = "ih\(suffix)", nsSide = "in\(suffix)"
        let work = "/tmp/imgfs-netns-\(suffix)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        func ip(_ arguments: String) throws -> Int32 {
            try ChildProcess.run("/bin/sh", ["-c", "ip \(arguments)"]).status
        }
        defer {
            _ = try? ip("netns del \(namespace)")
            _ = try? ip("link del \(hostSide)")
            try? FileManager.default.removeItem(atPath: work)
        }
        for command in [
            "netns add \(namespace)", "link add \(hostSide) type veth peer name \(nsSide)",
            "link set \(nsSide) netns \(namespace)", "addr add 198.51.100.1/30 dev \(hostSide)",
            "link set \(hostSide) up", "netns exec \(namespace) ip addr add 198.51.100.2/30 dev \(nsSide)",
            "netns exec \(namespace) ip link set \(nsSide) up", "netns exec \(namespace) ip link set lo up"
        ] {
            try #require(try ip(command) == 0, "ip \(command) (needs root)")
        }
        let server = """
            import http.server, sys
            class Redirect(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    open(sys.argv[2], "a").write(self.path + "\\n")
                    self.send_response(302)
                    self.send_header("Location", sys.argv[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                def log_message(self, *args):
                    pass
            http.server.HTTPServer(("198.51.100.2", 8080), Redirect).serve_forever()
            """
        try server.write(toFile: "\(work)/redirect.py", atomically: true, encoding: .utf8)
        let redirector = try ChildProcess.spawn(
            "/usr/sbin/ip",
            [
                "netns", "exec", namespace, "python3", "\(work)/redirect.py",
                origin.baseURL + "/icon.png", "\(work)/requests.log"
            ])
        defer { redirector.kill9AndReap() }
        try #require(Poll.until { TCPProbe.accepts(host: "198.51.100.2", port: 8080) }, "the redirector listens")
        let mount = try MountedImgfs(arguments: ["--deny-private-networks", "--tune", "retries=0"])
        defer { mount.stop() }
        #expect(PosixFile.read(mount.path("http://198.51.100.2:8080/photo.png")) == .failure(Errno(EACCES)))
        let seen = (try? String(contentsOfFile: "\(work)/requests.log", encoding: .utf8)) ?? ""
        #expect(seen == "/photo.png\n", "the public host was asked once: \(seen)")
        #expect(origin.totalRequests == 0, "the redirect to loopback was never followed")
        #expect(mount.log.contains("127.0.0.1 is loopback"))
    }

    @Test("a transfer that stalls below 1 KiB/s is abandoned: ETIMEDOUT")
    func stall() throws {
        var drip = OriginResponse.ok(try Fixtures.mediumJPEG(), contentType: "image/jpeg")
        drip.bytesPerSecond = 200
        try withMountedOrigin(["--tune", "stall-timeout=1"]) { origin, mount in
            origin.route("/drip.jpg", drip)
            let start = Date()
            #expect(PosixFile.read(mount.path(origin.baseURL + "/drip.jpg")) == .failure(Errno(ETIMEDOUT)))
            #expect(Date().timeIntervalSince(start) < 10)
        }
    }

    @Test("--tune connect-timeout: an origin that never completes the handshake fails the open with ETIMEDOUT in time")
    func connectTimeout() throws {
        // A listener on 127.0.0.1 whose accept queue is full: the kernel drops further SYNs, so a connect hangs
        // until the client gives up (what a black-holed address does, without leaving the machine).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 0) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound)
        var fillers: [Int32] = []
        defer { fillers.forEach { close($0) } }
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            fillers.append(filler)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) }
            }
        }
        // The first filler's handshake completes into the accept queue (full at backlog 0); later SYNs are dropped.
        let connected = { (filler: Int32) -> Bool in
            var peer = sockaddr()
            var size = socklen_t(MemoryLayout<sockaddr>.size)
            return getpeername(filler, &peer, &size) == 0
        }
        #expect(Poll.until { fillers.contains(where: connected) }, "the accept queue is full")
        let port = Int(UInt16(bigEndian: address.sin_port))
        let mount = try MountedImgfs(arguments: ["--tune", "connect-timeout=1", "--tune", "retries=0"])
        defer { mount.stop() }
        let start = Date()
        #expect(PosixFile.read(mount.path("http://127.0.0.1:\(port)/never.jpg")) == .failure(Errno(ETIMEDOUT)))
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 0.9 && elapsed < 5, "gave up after \(elapsed) s")
    }

    @Test("bad names get clear errors and fetch nothing")
    func badNames() throws {
        try withMountedOrigin { origin, mount in
            let images = mount.mountPoint + "/img/"
            #expect(
                PosixFile.read(images + NameCodec.encode("http://user:secret@127.0.0.1:\(origin.port)/a.png"))
                    == .failure(Errno(EACCES)))
            #expect(PosixFile.read(images + "http%3A%2F%2F127.0.0.1%2F%00.png") == .failure(Errno(EINVAL)))
            #expect(PosixFile.read(images + "http%3A%2F%2F127.0.0.1%2F%FF.png") == .failure(Errno(EINVAL)))
            #expect(PosixFile.read(images + NameCodec.encode("gopher://127.0.0.1/x")) == .failure(Errno(ENOENT)))
            #expect(PosixFile.read(images + String(repeating: "a", count: 300)) == .failure(Errno(ENOENT)))
            #expect(origin.totalRequests == 0)
            #expect(mount.log.contains("URLs with credentials (user:password@) are refused"))
        }
    }
}
