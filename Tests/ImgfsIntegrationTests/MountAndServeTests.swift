import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 2 through a real mount of the built binary, against a real HTTP origin on 127.0.0.1.
@Suite("Mount and serve", .serialized, .enabled(if: FuseAvailability.available))
struct MountAndServeTests {
    @Test("cat gives the exact bytes of small and multi-MiB PNG and JPEG images; ls -l shows Content-Length")
    func exactBytes() throws {
        let images: [(String, [UInt8], String)] = try [
            ("/icon.png", Fixtures.smallPNGs(1)[0], "image/png"),
            ("/photo.jpg", Fixtures.mediumJPEG(), "image/jpeg"),
            ("/wallpaper.jpg", Fixtures.largeJPEG(), "image/jpeg"),
            ("/wallpaper.png", Fixtures.largePNG(), "image/png")
        ]
        try withMountedOrigin { origin, mount in
            for (path, body, type) in images { origin.route(path, .ok(body, contentType: type)) }
            for (path, body, _) in images {
                let file = mount.path(origin.baseURL + path)
                let cat = try ChildProcess.run("/bin/sh", ["-c", "cat '\(file)' | sha256sum"])
                #expect(cat.status == 0)
                #expect(cat.output.hasPrefix(Fixtures.sha256(body)), "\(path) through cat")
                let listing = try ChildProcess.run("/bin/ls", ["-l", file])
                #expect(listing.output.split(separator: " ")[4] == "\(body.count)", "ls -l size of \(path)")
                #expect(origin.requestCount(path) == 1, "\(path) fetched once, then served from memory")
            }
            #expect(images[2].1.count > 2 << 20, "a multi-MiB image was among them")
        }
    }

    @Test("stat shows the true size of a cold file before any read")
    func statOfColdFile() throws {
        let image = try Fixtures.largePNG()
        try withMountedOrigin { origin, mount in
            origin.route("/cold.png", .ok(image, contentType: "image/png"))
            #expect(PosixFile.size(mount.path(origin.baseURL + "/cold.png")) == .success(image.count))
        }
    }

    @Test("32 programs reading one cold URL at once cause exactly one request")
    func dedup() throws {
        let image = try Fixtures.largeJPEG()
        var response = OriginResponse.ok(image, contentType: "image/jpeg")
        response.headerDelay = 0.5
        try withMountedOrigin { origin, mount in
            origin.route("/shared.jpg", response)
            let file = mount.path(origin.baseURL + "/shared.jpg")
            let readers = try (0..<32).map { index in
                try ChildProcess.spawn("/bin/sh", ["-c", "sha256sum '\(file)' > '\(mount.root)/sum\(index)'"])
            }
            let statuses = readers.map { $0.wait(timeout: 60) }
            #expect(statuses.allSatisfy { $0 == 0 })
            for index in 0..<32 {
                let sum = (try? String(contentsOfFile: "\(mount.root)/sum\(index)", encoding: .utf8)) ?? ""
                #expect(sum.hasPrefix(Fixtures.sha256(image)), "reader \(index)")
            }
            #expect(origin.requestCount("/shared.jpg") == 1)
            #expect(origin.bodyBytesSent("/shared.jpg") == image.count)
        }
    }

    @Test("200 concurrent cold reads of different slow URLs all complete with the right bytes")
    func manySlowURLs() throws {
        let icons = try Fixtures.smallPNGs(20)
        try withMountedOrigin { origin, mount in
            origin.route(prefix: "/slow/") { request in
                let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
                var response = OriginResponse.ok(icons[index % icons.count], contentType: "image/png")
                response.headerDelay = 0.2
                return response
            }
            let results = ParallelThreads.run(200) { index in
                PosixFile.read(mount.path("\(origin.baseURL)/slow/\(index)"))
            }
            for (index, result) in results.enumerated() {
                #expect(result == .success(icons[index % icons.count]), "reader \(index)")
            }
            #expect(origin.totalRequests == 200)
        }
    }

    @Test("while 20 opens wait on an origin that holds its headers, another URL's stat and cat finish at once")
    func slowOriginDoesNotStallOthers() throws {
        let slow = try TestOrigin()
        let fast = try TestOrigin()
        defer {
            slow.stop()
            fast.stop()
        }
        let icon = try Fixtures.smallPNGs(1)[0]
        slow.route(prefix: "/held/") { _ in
            var response = OriginResponse.ok(icon, contentType: "image/png")
            response.headerDelay = 10
            return response
        }
        fast.route("/quick.png", .ok(icon, contentType: "image/png"))
        let mount = try MountedImgfs(arguments: ["--tune", "timeout=30"])
        defer { mount.stop() }
        let held = try (0..<20).map { index in
            try ChildProcess.spawn("/bin/cat", [mount.path("\(slow.baseURL)/held/\(index)")])
        }
        defer { held.forEach { $0.kill9AndReap() } }
        #expect(Poll.until { slow.totalRequests >= 6 }, "the opens reached the slow origin (6 per host at once)")
        let quick = mount.path(fast.baseURL + "/quick.png")
        let start = Date()
        #expect(PosixFile.size(quick) == .success(icon.count))
        let cat = try ChildProcess.run("/bin/sh", ["-c", "cat '\(quick)' | sha256sum"])
        let elapsed = Date().timeIntervalSince(start)
        #expect(cat.output.hasPrefix(Fixtures.sha256(icon)))
        #expect(elapsed < 0.5, "stat and cat took \(elapsed) s")
        #expect(held.allSatisfy { $0.isRunning }, "the 20 opens are still waiting on the slow origin")
        // The 20 wait inside LOOKUP (the kernel was asked for parallel lookups), so this proves lookups of img/ do not
        // queue behind each other.
        #expect(mount.log.contains("the kernel runs lookups in parallel"))
    }

    @Test("a reader hit by Ctrl-C while its open waits on the origin ends at once")
    func interruptedReader() throws {
        var held = OriginResponse.ok([0x89, 0x50, 0x4e, 0x47], contentType: "image/png")
        held.headerDelay = 10
        try withMountedOrigin { origin, mount in
            origin.route("/held.png", held)
            let reader = try ChildProcess.spawn("/bin/cat", [mount.path(origin.baseURL + "/held.png")])
            defer { reader.kill9AndReap() }
            #expect(Poll.until { origin.requestCount("/held.png") == 1 }, "the open waits on the origin")
            #expect(reader.isRunning)
            let start = Date()
            reader.signal(SIGINT)
            #expect(reader.wait(timeout: 5) == 128 + SIGINT)
            #expect(Date().timeIntervalSince(start) < 1, "the interrupted open was answered at once")
        }
    }

    @Test(
        "a transfer every reader gave up on is cancelled when less than half arrived; one that others wait for is not")
    func abandonedTransfer() throws {
        let image = try Fixtures.largeJPEG()
        var drip = OriginResponse.ok(image, contentType: "image/jpeg")
        drip.bytesPerSecond = 256 * 1024
        var fast = drip
        fast.bytesPerSecond = 4 << 20
        try withMountedOrigin { origin, mount in
            origin.route("/alone.jpg", drip)
            origin.route("/shared.jpg", fast)
            let alone = try ChildProcess.spawn("/bin/cat", [mount.path(origin.baseURL + "/alone.jpg")])
            defer { alone.kill9AndReap() }
            #expect(Poll.until { origin.bodyBytesSent("/alone.jpg") >= 128 << 10 }, "the transfer is under way")
            alone.signal(SIGINT)
            #expect(alone.wait(timeout: 5) == 128 + SIGINT)
            #expect(mount.waitForLog { $0.contains("transfer cancelled: nobody wants it any more") })
            let sent = origin.bodyBytesSent("/alone.jpg")
            #expect(sent < image.count / 2, "the transfer stopped at \(sent) of \(image.count) bytes")
            #expect(mount.log.contains("transfer cancelled: nobody wants it any more"))
            let quitter = try ChildProcess.spawn("/bin/cat", [mount.path(origin.baseURL + "/shared.jpg")])
            defer { quitter.kill9AndReap() }
            let stayer = ParallelThreads.run(2) { index -> Result<[UInt8], Errno>? in
                if index == 0 {
                    Poll.until { origin.bodyBytesSent("/shared.jpg") > 0 }  // the shared transfer is under way
                    quitter.signal(SIGINT)
                    return nil
                }
                return PosixFile.read(mount.path(origin.baseURL + "/shared.jpg"))
            }
            #expect(stayer[1] == .success(image), "the reader that stayed got the whole image")
            #expect(origin.requestCount("/shared.jpg") == 1)
        }
    }

    @Test("a throttled large response hands its first 64 KiB to a reader long before the body ends")
    func streaming() throws {
        let image = try Fixtures.largeJPEG()
        var response = OriginResponse.ok(image, contentType: "image/jpeg")
        response.bytesPerSecond = 512 * 1024
        try withMountedOrigin { origin, mount in
            origin.route("/drip.jpg", response)
            let whole = Double(image.count) / Double(512 * 1024)
            let prefix = try #require(PosixFile.readPrefix(mount.path(origin.baseURL + "/drip.jpg"), count: 64 * 1024))
            #expect(prefix.bytes == Array(image.prefix(64 * 1024)))
            #expect(prefix.seconds < 1.5, "first 64 KiB after \(prefix.seconds) s of a \(whole) s body")
        }
    }

    @Test(
        "HTTP errors and bad names become errno: 404 ENOENT, 403 EACCES, 500 EIO, timeout ETIMEDOUT, bad escape EINVAL")
    func errors() throws {
        var stuck = OriginResponse.ok([1, 2, 3], contentType: "image/png")
        stuck.headerDelay = 5
        try withMountedOrigin(["--tune", "timeout=1"]) { origin, mount in
            origin.route("/forbidden.png", .status(403))
            origin.route("/broken.png", .status(500))
            origin.route("/stuck.png", stuck)
            #expect(PosixFile.read(mount.path(origin.baseURL + "/missing.png")) == .failure(Errno(ENOENT)))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/forbidden.png")) == .failure(Errno(EACCES)))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/broken.png")) == .failure(Errno(EIO)))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/stuck.png")) == .failure(Errno(ETIMEDOUT)))
            #expect(PosixFile.read("\(mount.mountPoint)/img/not-a-url") == .failure(Errno(ENOENT)))
            #expect(PosixFile.read(mount.path("ftp://127.0.0.1/x.png")) == .failure(Errno(ENOENT)))
            #expect(PosixFile.read("\(mount.mountPoint)/img/http%3A%2F%2F127.0.0.1%2Fa%zz") == .failure(Errno(EINVAL)))
            #expect(origin.requestCount("/missing.png") == 1)
            #expect(
                mount.log.contains("HTTP 404 Not Found") && mount.log.contains("/missing.png"),
                "the failure is logged with its URL")
        }
    }

    @Test("writes, creates, mkdir and rename are refused with EROFS; files are 0444, img/ 0711, the root 0555")
    func readOnly() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/a.png", .ok(icon, contentType: "image/png"))
            let file = mount.path(origin.baseURL + "/a.png")
            #expect(PosixFile.read(file) == .success(icon))
            #expect(PosixFile.openError(file, flags: O_WRONLY) == EROFS)
            #expect(PosixFile.openError(file, flags: O_RDWR) == EROFS)
            #expect(PosixFile.openError("\(mount.mountPoint)/img/new.png", flags: O_WRONLY | O_CREAT) == EROFS)
            #expect(mkdir("\(mount.mountPoint)/img/dir", 0o755) == -1 && errno == EROFS)
            #expect(rename(file, "\(mount.mountPoint)/img/other") == -1 && errno == EROFS)
            var status = stat()
            #expect(stat(file, &status) == 0 && status.st_mode & 0o7777 == 0o444)
            #expect(stat("\(mount.mountPoint)/img", &status) == 0 && status.st_mode & 0o7777 == 0o711)
            #expect(stat(mount.mountPoint, &status) == 0 && status.st_mode & 0o7777 == 0o555)
        }
    }

    @Test("long URLs work through the chunked and digest forms that imgfs path prints")
    func longURLs() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route(prefix: "/signed.png", { _ in .ok(icon, contentType: "image/png") })
            for length in [1_200, 3_000, 8_192] {
                let stem = "\(origin.baseURL)/signed.png?sig="
                let url = stem + String(repeating: "Zq-_~.%2F", count: 1000).prefix(length - stem.utf8.count)
                let printed = try ChildProcess.run(MountedImgfs.binary, ["path", "--mount", mount.mountPoint, url])
                #expect(printed.status == 0, "\(printed.output)")
                let path = printed.output.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(path.utf8.count < 4096)
                #expect(path.split(separator: "/").allSatisfy { $0.utf8.count <= 255 })
                let cat = try ChildProcess.run("/bin/sh", ["-c", "cat '\(path)' | sha256sum"])
                #expect(cat.output.hasPrefix(Fixtures.sha256(icon)), "URL of \(length) bytes via \(path.prefix(80))…")
            }
            let relative = try ChildProcess.run(MountedImgfs.binary, ["path", "\(origin.baseURL)/a.png"])
            #expect(relative.output == "img/\(NameCodec.encode("\(origin.baseURL)/a.png"))\n")
        }
    }

    @Test("SIGTERM unmounts and the daemon exits 0; so does fusermount3 -u")
    func shutdown() throws {
        let first = try MountedImgfs()
        first.process.signal(SIGTERM)
        #expect(first.process.wait(timeout: 10) == 0)
        #expect(!first.isMounted)
        first.stop()
        let second = try MountedImgfs()
        #expect(second.stop() == 0)
        #expect(!second.isMounted)
    }
}
