import Foundation
import Glibc
import ImgfsModel
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
            "--header", "X-Api-Key: k-secret", "--header", "Authorization: Bearer t0ken", "--header",
            "User-Agent: Viewer/2.0",
            "--header", "Referer: https://gallery.example/", "--cookie-file", cookies
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
        #expect(!mount.log.contains("k-secret"), "no header value is logged")
        #expect(mount.log.contains("Authorization: ***") && mount.log.contains("X-Api-Key: ***"))
    }

    @Test("the cookie file is read again when it changes")
    func cookieFileReloaded() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cookies = "\(directory)/cookies.txt"
        try write("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tfirst\n", to: cookies)
        try withMountedOrigin(["--cookie-file", cookies]) { origin, mount in
            origin.route(prefix: "/c", { _ in .ok(image, contentType: "image/png") })
            #expect(reads(mount.path(origin.baseURL + "/c1.png"), image))
            try write("127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tsecond\n", to: cookies)
            #expect(reads(mount.path(origin.baseURL + "/c2.png"), image))
            let sent = origin.requests().map { ($0.path, $0.header("Cookie")) }
            #expect(sent.first { $0.0 == "/c1.png" }?.1 == "sid=first")
            #expect(sent.first { $0.0 == "/c2.png" }?.1 == "sid=second")
        }
    }

    @Test("policy rules apply by host pattern, first match wins; SIGHUP and imgfs reload reread the file")
    func policyRulesAndReload() throws {
        let image = try Fixtures.smallPNGs(1)[0]
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
        try withMountedOrigin(["--policy-file", policy, "--header", "X-Cli: yes"]) { origin, mount in
            origin.route(prefix: "/p", { _ in .ok(image, contentType: "image/png") })
            #expect(reads(mount.path(origin.baseURL + "/p1.png"), image))
            #expect(
                PosixFile.read(mount.path("http://localhost:\(origin.port)/p-denied.png")) == .failure(Errno(EACCES)))
            #expect(origin.requestCount("/p-denied.png") == 0, "a denied host is never contacted")
            try write(rules("two"), to: policy)
            mount.process.signal(SIGHUP)
            #expect(Poll.until(timeout: 10, interval: 0.02) { mount.log.contains("policy reloaded") })
            #expect(mount.isMounted, "SIGHUP reloads instead of unmounting")
            #expect(reads(mount.path(origin.baseURL + "/p2.png"), image))
            try write("rules:\n  - host: 127.0.0.1\n    colour: blue\n", to: policy)
            let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", mount.mountPoint])
            #expect(reload.status == 1, "an invalid file is a failed reload: \(reload.output)")
            #expect(reload.output.contains("kept the old rules"), "\(reload.output)")
            #expect(Poll.until(timeout: 10, interval: 0.02) { mount.log.contains("policy.yaml:3: unknown key colour") })
            #expect(reads(mount.path(origin.baseURL + "/p3.png"), image))
            let sent = Dictionary(origin.requests().map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(sent["/p1.png"]?.header("X-Rule") == "one")
            #expect(sent["/p1.png"]?.header("User-Agent") == "Rule-one")
            #expect(sent["/p1.png"]?.header("X-Cli") == "yes")
            #expect(sent["/p2.png"]?.header("X-Rule") == "two")
            #expect(sent["/p3.png"]?.header("X-Rule") == "two", "an invalid file at reload keeps the old rules")
        }
    }

    @Test("an invalid policy file fails the mount with one line naming the file, the line and the reason")
    func invalidPolicyFile() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let policy = "\(directory)/bad.yaml"
        try write("rules:\n  - host: example.com\n    headers:\n      X-A: b\n    max-age: 3\n", to: policy)
        try FileManager.default.createDirectory(atPath: "\(directory)/mnt", withIntermediateDirectories: true)
        let mount = try ChildProcess.run(
            MountedImgfs.binary,
            [
                "mount", "\(directory)/mnt", "--foreground",
                "--cache-dir", "\(directory)/cache",
                "--policy-file", policy
            ], timeout: 30)
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
        try write(
            "rules:\n  - host: \"*\"\n    cache-key:\n      drop-query: [\"X-Amz-*\", Expires, utm_*]\n",
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
        let entries = try FileManager.default.subpathsOfDirectory(atPath: cache).filter {
            $0.hasSuffix(".data") || $0.hasSuffix(".entry")
        }
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

    @Test("--disk-limit 0: after 100 reads the cache directory holds nothing but the log")
    func noDiskCache() throws {
        let images = try Fixtures.smallPNGs(20)
        let origin = try TestOrigin()
        defer { origin.stop() }
        for (index, image) in images.enumerated() {
            origin.route("/m\(index).png", .ok(image, contentType: "image/png"))
        }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = "\(directory)/cache"
        let mount = try MountedImgfs(arguments: ["--disk-limit", "0"], cacheDirectory: cache)
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
