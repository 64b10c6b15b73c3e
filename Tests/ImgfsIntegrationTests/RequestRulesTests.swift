import Foundation
import Glibc
import ImgfsCore
import ImgfsTestSupport
import Testing

/// Issue 18: what requests carry (headers, user agent, referer, cookies), rules per host from a policy file, cache
/// keys without volatile query parameters, and memory-only caching — through a real mount against real origins.
@Suite("Request rules", .serialized, .enabled(if: FuseAvailability.available))
struct RequestRulesTests {
    private func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// Whether the file at `path` reads as exactly `expected` (a Bool, so a failure does not print the bytes).
    private func reads(_ path: String, _ expected: [UInt8]) -> Bool {
        read(path) == expected
    }

    private func temporaryDirectory() throws -> String {
        let path = "/tmp/imgfs-rules-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Polls `condition` for up to `timeout` seconds.
    private func eventually(_ timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    @Test("headers, user agent, referer and cookies reach the origin, and not the other host after a redirect")
    func headersStayOnTheirHost() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let first = try TestOrigin(), other = try TestOrigin()
        defer { first.stop(); other.stop() }
        // "localhost" is another host than "127.0.0.1" (and another port): the redirect crosses hosts.
        first.route("/direct.png", .ok(image, contentType: "image/png"))
        first.route("/moved.png", .redirect(to: "http://localhost:\(other.port)/target.png"))
        other.route("/target.png", .ok(image, contentType: "image/png"))
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cookies = "\(directory)/cookies.txt"
        try write("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tabc123\n", to: cookies)
        let mount = try MountedImgfs(arguments: [
            "--header", "X-Api-Key: k-secret", "--header", "Authorization: Bearer t0ken", "--user-agent", "Viewer/2.0",
            "--referer", "https://gallery.example/", "--cookie-file", cookies,
        ])
        defer { mount.stop() }
        #expect(reads(mount.path(first.baseURL + "/direct.png"), image))
        #expect(reads(mount.path(first.baseURL + "/moved.png"), image))
        let direct = try #require(first.requests().first { $0.path == "/direct.png" })
        #expect(direct.header("X-Api-Key") == "k-secret")
        #expect(direct.header("Authorization") == "Bearer t0ken")
        #expect(direct.header("User-Agent") == "Viewer/2.0")
        #expect(direct.header("Referer") == "https://gallery.example/")
        #expect(direct.header("Cookie") == "session=abc123")
        let moved = try #require(first.requests().first { $0.path == "/moved.png" })
        #expect(moved.header("X-Api-Key") == "k-secret")
        let target = try #require(other.requests().first { $0.path == "/target.png" })
        #expect(target.header("X-Api-Key") == nil)
        #expect(target.header("Authorization") == nil)
        #expect(target.header("Referer") == nil)
        #expect(target.header("Cookie") == nil)
        #expect(target.header("User-Agent")?.hasPrefix("imgfs/") == true)
        #expect(!mount.log.contains("t0ken") && !mount.log.contains("abc123"), "credentials are never logged")
        #expect(mount.log.contains("Authorization: ***") && mount.log.contains("X-Api-Key: k-secret"))
    }

    @Test("the cookie file is read again when it changes")
    func cookieFileReloaded() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route(prefix: "/c", { _ in .ok(image, contentType: "image/png") })
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cookies = "\(directory)/cookies.txt"
        try write("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfirst\n", to: cookies)
        let mount = try MountedImgfs(arguments: ["--cookie-file", cookies])
        defer { mount.stop() }
        #expect(reads(mount.path(origin.baseURL + "/c1.png"), image))
        try write("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tsecond\n", to: cookies)
        #expect(reads(mount.path(origin.baseURL + "/c2.png"), image))
        let sent = origin.requests().map { ($0.path, $0.header("Cookie")) }
        #expect(sent.first { $0.0 == "/c1.png" }?.1 == "sid=first")
        #expect(sent.first { $0.0 == "/c2.png" }?.1 == "sid=second")
    }

    @Test("policy rules apply by host pattern, first match wins; SIGHUP and imgfs reload reread the file")
    func policyRulesAndReload() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route(prefix: "/p", { _ in .ok(image, contentType: "image/png") })
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = "\(directory)/policy.yaml"
        func rules(_ tag: String) -> String {
            """
            rules:
              - host: localhost
                deny: true
              - host: 127.0.0.1
                headers:
                  X-Rule: \(tag)
                user-agent: Rule-\(tag)
              - host: "*"
                headers:
                  X-Rule: default
            """
        }
        try write(rules("one"), to: policy)
        let mount = try MountedImgfs(arguments: ["--policy-file", policy, "--header", "X-Cli: yes"])
        defer { mount.stop() }
        #expect(reads(mount.path(origin.baseURL + "/p1.png"), image))
        #expect(PosixFile.read(mount.path("http://localhost:\(origin.port)/p-denied.png")) == .failure(Errno(EACCES)))
        #expect(origin.requestCount("/p-denied.png") == 0, "a denied host is never contacted")
        try write(rules("two"), to: policy)
        mount.process.signal(SIGHUP)
        #expect(eventually { mount.log.contains("policy reloaded") })
        #expect(mount.isMounted, "SIGHUP reloads instead of unmounting")
        #expect(reads(mount.path(origin.baseURL + "/p2.png"), image))
        try write("rules:\n  - host: 127.0.0.1\n    colour: blue\n", to: policy)
        let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", mount.mountPoint])
        #expect(reload.status == 0, "\(reload.output)")
        #expect(eventually { mount.log.contains("policy.yaml:3: unknown key colour") })
        #expect(reads(mount.path(origin.baseURL + "/p3.png"), image))
        let sent = Dictionary(origin.requests().map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(sent["/p1.png"]?.header("X-Rule") == "one")
        #expect(sent["/p1.png"]?.header("User-Agent") == "Rule-one")
        #expect(sent["/p1.png"]?.header("X-Cli") == "yes")
        #expect(sent["/p2.png"]?.header("X-Rule") == "two")
        #expect(sent["/p3.png"]?.header("X-Rule") == "two", "an invalid file at reload keeps the old rules")
    }

    @Test("an invalid policy file fails the mount with one line naming the file, the line and the reason")
    func invalidPolicyFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = "\(directory)/bad.yaml"
        try write("rules:\n  - host: example.com\n    headers:\n      X-A: b\n    max-age: 3\n", to: policy)
        try FileManager.default.createDirectory(atPath: "\(directory)/mnt", withIntermediateDirectories: true)
        let mount = try ChildProcess.run(MountedImgfs.binary, ["mount", "\(directory)/mnt", "--foreground",
                                                               "--cache-dir", "\(directory)/cache",
                                                               "--policy-file", policy], timeout: 30)
        #expect(mount.status != 0)
        let errorLines = mount.output.split(separator: "\n").filter { $0.contains("bad.yaml") }
        #expect(errorLines.count == 1, "\(mount.output)")
        #expect(errorLines.first?.contains("bad.yaml:5: unknown key max-age") == true, "\(mount.output)")
        try write("rules:\n  - host: [example.com\n", to: policy)
        let check = try ChildProcess.run(MountedImgfs.binary, ["policy", "check", policy])
        #expect(check.status != 0)
        #expect(check.output.contains("bad.yaml:2:") || check.output.contains("bad.yaml:3:"), "\(check.output)")
        try write("rules:\n  - host: \"*.cdn.example\"\n    cache-key:\n      drop-query: [X-Amz-*]\n", to: policy)
        let valid = try ChildProcess.run(MountedImgfs.binary, ["policy", "check", policy])
        #expect(valid.status == 0, "\(valid.output)")
    }

    @Test("two signed URLs differing in X-Amz-Signature: one GET, one disk entry, each request with its own URL")
    func signedURLsShareOneEntry() throws {
        let image = try Fixtures.mediumJPEG()
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route(prefix: "/signed.jpg", { _ in .ok(image, contentType: "image/jpeg") })
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = "\(directory)/policy.yaml"
        try write("rules:\n  - host: \"*\"\n    cache-key:\n      drop-query: [\"X-Amz-*\", Expires, utm_*]\n",
                  to: policy)
        let cache = "\(directory)/cache"
        let first = "\(origin.baseURL)/signed.jpg?w=300&X-Amz-Signature=aaa111&X-Amz-Date=1"
        let second = "\(origin.baseURL)/signed.jpg?w=300&X-Amz-Signature=bbb222&X-Amz-Date=2&utm_source=x"
        do {
            let mount = try MountedImgfs(arguments: ["--policy-file", policy], cacheDirectory: cache)
            defer { mount.stop() }
            #expect(reads(mount.path(first), image))
            #expect(reads(mount.path(second), image))
            #expect(origin.totalRequests == 1)
            #expect(origin.requests().first?.path == "/signed.jpg?w=300&X-Amz-Signature=aaa111&X-Amz-Date=1")
        }
        let entries = try FileManager.default.subpathsOfDirectory(atPath: cache).filter { $0.hasSuffix(".data") }
        #expect(entries.count == 1, "\(entries)")
        do {
            // After a restart, a third signature is a disk hit: no request at all.
            let mount = try MountedImgfs(arguments: ["--policy-file", policy], cacheDirectory: cache)
            defer { mount.stop() }
            #expect(reads(mount.path("\(origin.baseURL)/signed.jpg?w=300&X-Amz-Signature=ccc333&Expires=5"), image))
            #expect(origin.totalRequests == 1)
        }
        // A fresh fetch of the second name (after emptying the caches) sends its own signature.
        let mount = try MountedImgfs(arguments: ["--policy-file", policy, "--policy", "reload"], cacheDirectory: cache)
        defer { mount.stop() }
        #expect(reads(mount.path(second), image))
        #expect(origin.requests().last?.path == "/signed.jpg?w=300&X-Amz-Signature=bbb222&X-Amz-Date=2&utm_source=x")
        #expect(origin.totalRequests == 2)
    }

    @Test("--no-disk-cache: after 100 reads the cache directory holds nothing but the log")
    func noDiskCache() throws {
        let images = try Fixtures.smallPNGs(20)
        let origin = try TestOrigin()
        defer { origin.stop() }
        for (index, image) in images.enumerated() { origin.route("/m\(index).png", .ok(image, contentType: "image/png")) }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = "\(directory)/cache"
        let mount = try MountedImgfs(arguments: ["--no-disk-cache"], cacheDirectory: cache)
        for round in 0..<5 {
            for (index, image) in images.enumerated() {
                #expect(reads(mount.path(origin.baseURL + "/m\(index).png"), image), "round \(round)")
            }
        }
        #expect(mount.stop() == 0)
        let left = try FileManager.default.subpathsOfDirectory(atPath: cache)
        #expect(left.isEmpty, "\(left)")
        #expect(origin.totalRequests == 20)
    }
}

/// Issue 18: `--proxy` through a recording proxy on 127.0.0.1 (absolute-form GET for http, CONNECT for https).
@Suite("Proxy", .serialized, .enabled(if: FuseAvailability.available))
struct ProxyTests {
    @Test("--proxy: http goes through the proxy as an absolute-form GET, --noproxy bypasses it")
    func httpThroughProxy() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin(), proxy = try RecordingProxy()
        defer { origin.stop(); proxy.stop() }
        origin.route("/via-proxy.png", .ok(image, contentType: "image/png"))
        origin.route("/direct.png", .ok(image, contentType: "image/png"))
        let mount = try MountedImgfs(arguments: ["--proxy", proxy.url, "--noproxy", "localhost",
                                                 "--header", "X-Through: proxy"])
        defer { mount.stop() }
        let viaProxy = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/via-proxy.png")).map(Array.init)
        let same = viaProxy == image
        #expect(same, "log:\n\(mount.log)")
        let viaLocalhost = "http://localhost:\(origin.port)/direct.png"
        let direct = FileManager.default.contents(atPath: mount.path(viaLocalhost)).map(Array.init)
        #expect(direct?.count == image.count)
        let entries = proxy.entries
        #expect(entries.count == 1, "\(entries.map(\.target))")
        #expect(entries.first?.method == "GET")
        #expect(entries.first?.target == origin.baseURL + "/via-proxy.png")
        #expect(entries.first?.headers.contains { $0.0 == "X-Through" && $0.1 == "proxy" } == true)
        #expect(origin.requestCount("/via-proxy.png") == 1 && origin.requestCount("/direct.png") == 1)
    }

    @Test("--proxy with https: a CONNECT tunnel to the origin, TLS end to end")
    func httpsThroughProxy() throws {
        let image = try Fixtures.mediumJPEG()
        let origin = try TLSTests.TLSOrigin(files: ["t.jpg": image])
        let proxy = try RecordingProxy()
        defer { origin.stop(); proxy.stop() }
        let mount = try MountedImgfs(arguments: ["--proxy", proxy.url, "--insecure"])
        defer { mount.stop() }
        let read = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/t.jpg")).map(Array.init)
        let same = read == image
        #expect(same, "\(read?.count ?? -1) bytes; log:\n\(mount.log)")
        #expect(proxy.entries.first?.method == "CONNECT")
        #expect(proxy.entries.first?.target == "127.0.0.1:\(origin.port)")
        #expect(origin.requests.contains { $0.hasPrefix("/t.jpg") && $0.hasSuffix(" 200") }, "\(origin.requests)")
    }
}

/// Issue 18: `--placeholder` serves its image, with its own size, for any URL that fails, while `user.imgfs.error`,
/// the log and the statistics tell the truth.
@Suite("Placeholder", .serialized, .enabled(if: FuseAvailability.available))
struct PlaceholderTests {
    @Test("--placeholder for 404, 500, a non-image body and a timeout; a working URL still reads as itself")
    func placeholderForFailures() throws {
        let images = try Fixtures.smallPNGs(2)
        let placeholder = images[0], real = images[1]
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/500.png", .status(500))
        origin.route("/page.png", .ok(Array("<!DOCTYPE html><html>no</html>".utf8), contentType: "text/html"))
        var slow = OriginResponse.ok(real, contentType: "image/png")
        slow.headerDelay = 5
        origin.route("/slow.png", slow)
        origin.route("/real.png", .ok(real, contentType: "image/png"))
        let directory = "/tmp/imgfs-placeholder-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(placeholder).write(to: URL(fileURLWithPath: "\(directory)/placeholder.png"))
        let mount = try MountedImgfs(arguments: ["--placeholder", "\(directory)/placeholder.png", "--retries", "0",
                                                 "--timeout", "1"])
        defer { mount.stop() }
        let cases = [("/404.png", "HTTP 404"), ("/500.png", "HTTP 500"), ("/page.png", "not an image"),
                     ("/slow.png", "timed out")]
        for (path, why) in cases {
            let file = mount.path(origin.baseURL + path)
            let bytes = FileManager.default.contents(atPath: file).map(Array.init)
            #expect(bytes == placeholder ? true : false, "\(path): \(bytes?.count ?? -1) bytes")
            let size = try ChildProcess.run("/usr/bin/stat", ["-c", "%s", file]).output
            #expect(size == "\(placeholder.count)\n", "\(path): stat says \(size)")
            let error = try ChildProcess.run("/usr/bin/getfattr", ["--only-values", "-n", "user.imgfs.error", file])
            #expect(error.output.lowercased().contains(why.lowercased()), "\(path): \(error.output)")
        }
        let working = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/real.png")).map(Array.init)
        #expect(working == real ? true : false)
        #expect(mount.waitForStatistics { ($0["placeholders_served"] ?? 0) >= 4 }, "\(mount.statistics())")
        #expect(mount.log.contains("serving the placeholder"))
        #expect(mount.log.contains("/404.png") && mount.log.contains("fetch failed"))
    }
}

/// Issue 18: a policy rule's expiry and max size apply to its hosts only.
@Suite("Per-host settings", .serialized, .enabled(if: FuseAvailability.available))
struct PerHostSettingsTests {
    @Test("expire and max-size of a rule apply to the hosts its pattern matches, the mount's settings to the others")
    func expiryAndMaxSizeByHost() throws {
        let small = try Fixtures.smallPNGs(1)[0], large = try Fixtures.mediumJPEG()
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/small.png", .ok(small, contentType: "image/png"))
        origin.route("/large.jpg", .ok(large, contentType: "image/jpeg"))
        let directory = "/tmp/imgfs-hostsettings-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = "\(directory)/policy.yaml"
        let text = """
            rules:
              - host: 127.0.0.1
                expire: "0"
              - host: localhost
                max-size: \(large.count - 1)
            """
        try text.write(toFile: policy, atomically: true, encoding: .utf8)
        let mount = try MountedImgfs(arguments: ["--policy-file", policy])
        defer { mount.stop() }
        let numeric = origin.baseURL, named = "http://localhost:\(origin.port)"
        func requests(_ host: String) -> Int {
            origin.requests().filter { $0.path == "/small.png" && $0.header("Host") == "\(host):\(origin.port)" }.count
        }
        // Reopen both until 127.0.0.1's copy (expire 0) is revalidated: a just-validated copy is served for a moment
        // (the repository's minimum freshness), so poll rather than expect it at the second open.
        let deadline = Date().addingTimeInterval(10)
        repeat {
            #expect(PosixFile.read(mount.path(numeric + "/small.png")) == .success(small))
            #expect(PosixFile.read(mount.path(named + "/small.png")) == .success(small))
            Thread.sleep(forTimeInterval: 0.02)
        } while requests("127.0.0.1") < 2 && Date() < deadline
        #expect(requests("127.0.0.1") >= 2, "expire 0 on 127.0.0.1: a later open revalidates")
        #expect(requests("localhost") == 1, "localhost keeps the mount's 24 h")
        #expect(PosixFile.read(mount.path(named + "/large.jpg")) == .failure(Errno(EFBIG)))
        let numericLarge = PosixFile.read(mount.path(numeric + "/large.jpg"))
        #expect(numericLarge == .success(large) ? true : false, "the max size is localhost's only")
    }
}
