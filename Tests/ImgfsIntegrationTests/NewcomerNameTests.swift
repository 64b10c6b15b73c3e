import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 15, what a new user hit with names and errors: URLs with characters that must be percent-encoded, failed
/// URLs that looked like empty files, `path --ext`, `imgfs why`, `imgfs name`, prefetch's reasons, the README.
@Suite("Newcomer: names and errors", .serialized, .enabled(if: FuseAvailability.available))
struct NewcomerNameTests {
    private func sh(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 60)
    }

    private var imgfs: String { "'\(MountedImgfs.binary)'" }

    /// `text` in single quotes for /bin/sh.
    private func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test(
        "a URL with spaces, quotes, brackets, pipes or non-ASCII works from imgfs path, quote(), encoded: one image"
    )
    func charactersThatMustBeEncoded() throws {
        let icons = try Fixtures.smallPNGs(2)
        try withMountedOrigin { origin, mount in
            origin.route("/misc/green%20photo.png", .ok(icons[0], contentType: "image/png"))
            origin.route("/odd/a%22%3C%3E%5C%5E%60%7B%7C%7D%C3%A9.png", .ok(icons[1], contentType: "image/png"))
            let spaced = origin.baseURL + "/misc/green photo.png"
            let printed = try sh("\(imgfs) path --mount '\(mount.mountPoint)' \(quoted(spaced))")
            #expect(printed.status == 0, "\(printed.output)")
            let path = printed.output.trimmingCharacters(in: .newlines)
            #expect(path == mount.path(spaced))
            #expect(PosixFile.read(path) == .success(icons[0]))
            let python = """
                import hashlib, os, urllib.parse, sys
                p = os.path.join(sys.argv[1], "img", urllib.parse.quote(sys.argv[2], safe=""))
                print(hashlib.sha256(open(p, "rb").read()).hexdigest())
                """
            let fromPython = try sh("python3 -c \(quoted(python)) '\(mount.mountPoint)' \(quoted(spaced))")
            #expect(fromPython.output.hasPrefix(Fixtures.sha256(icons[0])), "\(fromPython.output)")
            #expect(PosixFile.read(mount.path(origin.baseURL + "/misc/green%20photo.png")) == .success(icons[0]))
            #expect(origin.requestCount("/misc/green%20photo.png") == 1, "one image, one cache key, one request")
            let odd = origin.baseURL + "/odd/a\"<>\\^`{|}é.png"
            #expect(PosixFile.read(mount.path(odd)) == .success(icons[1]))
            #expect(origin.requestCount("/odd/a%22%3C%3E%5C%5E%60%7B%7C%7D%C3%A9.png") == 1)
            let name = try sh("\(imgfs) name \(quoted(path))")
            #expect(name.output == spaced + "\n", "imgfs name prints the URL a name stands for: \(name.output)")
        }
    }

    @Test("a 404 or EFBIG name does not exist for test, ls, stat and Python; imgfs why says why")
    func failedNamesDoNotExist() throws {
        let image = try Fixtures.mediumJPEG()
        try withMountedOrigin(["--max-size", "10K"]) { origin, mount in
            origin.route("/big.jpg", .ok(image, contentType: "image/jpeg"))
            let gone = mount.path(origin.baseURL + "/gone.png")
            #expect(try sh("[ -e '\(gone)' ]").status != 0)
            #expect(try sh("[ -f '\(gone)' ]").status != 0, "-f after -e: no empty regular file")
            #expect(try sh("ls '\(gone)'").status != 0)
            #expect(try sh("ls -l '\(gone)'").status != 0)
            let python = "import os, sys; print(os.path.exists(sys.argv[1]), os.path.isfile(sys.argv[1]))"
            #expect(try sh("python3 -c \(quoted(python)) '\(gone)'").output == "False False\n")
            #expect(PosixFile.size(gone) == .failure(Errno(ENOENT)))
            let why = try sh("\(imgfs) why --mount '\(mount.mountPoint)' '\(origin.baseURL)/gone.png'")
            #expect(why.status == 0 && why.output.contains("HTTP 404 Not Found"), "\(why.output)")
            let big = mount.path(origin.baseURL + "/big.jpg")
            let stat = try sh("stat -c %s '\(big)' 2>&1")
            #expect(stat.status != 0 && stat.output.contains("File too large"), "\(stat.output)")
            #expect(try sh("[ -f '\(big)' ]").status != 0)
            #expect(PosixFile.size(big) == .failure(Errno(EFBIG)))
            let whyBig = try sh("\(imgfs) why --mount '\(mount.mountPoint)' '\(origin.baseURL)/big.jpg'")
            #expect(whyBig.output.contains("\(image.count)"), "\(whyBig.output)")
            #expect(try sh("ls '\(mount.mountPoint)/img'").output.isEmpty)
        }
    }

    @Test(
        "a cached image the origin says is gone stops existing: stat after the failed open is ENOENT, not the old size"
    )
    func goneAfterRevalidation() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin(["--expire", "1"]) { origin, mount throws in
            origin.route("/soon-gone.png", .ok(icon, contentType: "image/png"))
            let file = mount.path(origin.baseURL + "/soon-gone.png")
            #expect(PosixFile.read(file) == .success(icon))
            #expect(PosixFile.size(file) == .success(icon.count))
            origin.removeAllRoutes()
            Poll.elapse(1.2)  // the copy must expire (time itself is the condition)
            #expect(PosixFile.read(file) == .failure(Errno(ENOENT)), "revalidated: 404 drops it")
            #expect(PosixFile.size(file) == .failure(Errno(ENOENT)), "the kernel kept no attributes of it")
            #expect(try sh("[ -e '\(file)' ]").status != 0)
        }
    }

    @Test(
        "path --ext uses the image's signature, fetching it first; prefetch shows the daemon's reason and 'not a URL'")
    func extensionsAndReasons() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin(["--tune", "retries=0"]) { origin, mount in
            origin.route("/blob", .ok(icon, contentType: "application/octet-stream"))
            origin.route("/broken.png", .status(500))
            let blob = origin.baseURL + "/blob"
            let ext = try sh("\(imgfs) path --ext --mount '\(mount.mountPoint)' '\(blob)'")
            #expect(ext.output == mount.path(blob + "#.png") + "\n", "\(ext.output)")
            #expect(PosixFile.read(mount.path(blob + "#.png")) == .success(icon))
            let list = "\(mount.root)/urls.txt"
            try "\(origin.baseURL)/broken.png\nhello world\n\(blob)\n".write(
                toFile: list, atomically: true, encoding: .utf8)
            let prefetch = try sh("\(imgfs) prefetch --quiet '\(mount.mountPoint)' '\(list)'")
            #expect(prefetch.status == 1)
            #expect(
                prefetch.output.contains("failed: \(origin.baseURL)/broken.png: HTTP 500 Internal Server Error"),
                "\(prefetch.output)")
            #expect(prefetch.output.contains("failed: hello world: not a URL"), "\(prefetch.output)")
            let path = try sh("\(imgfs) path 'hello world' 2>&1")
            #expect(path.status != 0 && path.output.contains("not a URL"), "\(path.output)")
            let chunked = origin.baseURL + "/" + String(repeating: "long-", count: 80) + ".png"
            let relative = try sh("\(imgfs) path \(quoted(chunked))").output.trimmingCharacters(in: .newlines)
            #expect(relative.hasPrefix("img/+/"))
            #expect(try sh("\(imgfs) name \(quoted(relative))").output == chunked + "\n")
        }
    }

    @Test("the README's quick start puts imgfs on PATH and documents the proxy variables libcurl reads")
    func readme() throws {
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: package.appendingPathComponent("README.md"), encoding: .utf8)
        let quickStart =
            readme.components(separatedBy: "## Quick start").dropFirst().first?
            .components(separatedBy: "\n## ").first ?? ""
        #expect(quickStart.contains("mount-scripts/install --user"), "the quick start installs imgfs")
        #expect(quickStart.contains("~/.local/bin"), "and says where, for PATH")
        for variable in ["http_proxy", "https_proxy", "no_proxy", "ALL_PROXY"] {
            #expect(readme.contains("`\(variable)`"), "README documents \(variable)")
        }
    }

    @Test("http_proxy sends requests through the proxy; no_proxy exempts a host")
    func proxyEnvironment() throws {
        let proxy = try TestOrigin()
        defer { proxy.stop() }
        let icons = try Fixtures.smallPNGs(2)
        proxy.route("http://img.invalid/p.png", .ok(icons[0], contentType: "image/png"))
        proxy.route("/direct.png", .ok(icons[1], contentType: "image/png"))
        var environment = ProcessInfo.processInfo.environment
        environment["http_proxy"] = proxy.baseURL
        environment["no_proxy"] = "localhost"
        let mount = try MountedImgfs(environment: environment)
        defer { mount.stop() }
        #expect(PosixFile.read(mount.path("http://img.invalid/p.png")) == .success(icons[0]))
        #expect(proxy.requestCount("http://img.invalid/p.png") == 1, "asked the proxy for the absolute URL")
        #expect(PosixFile.read(mount.path("http://localhost:\(proxy.port)/direct.png")) == .success(icons[1]))
        #expect(proxy.requestCount("/direct.png") == 1, "no_proxy: connected directly")
        mount.stop()
        let denied = try MountedImgfs(arguments: ["--deny-private-networks"], environment: environment)
        defer { denied.stop() }
        #expect(
            PosixFile.read(denied.path("http://img.invalid/q.png")) == .failure(Errno(EACCES)),
            "--deny-private-networks checks the proxy's address")
        #expect(proxy.requestCount("http://img.invalid/q.png") == 0)
    }
}
