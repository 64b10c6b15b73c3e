import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 5: the programs people point at files, used for real through the mount.
@Suite("Real clients", .serialized, .enabled(if: FuseAvailability.available))
struct ClientTests {
    private func sh(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 120)
    }

    /// Whether two commands print the same bytes (and both print some).
    private func same(_ first: String, _ second: String) throws -> Bool {
        let a = try sh("\(first) | sha256sum"), b = try sh("\(second) | sha256sum")
        return a.status == 0 && a.output == b.output && !a.output.hasPrefix("e3b0c442")
    }

    @Test("ls -l, stat, cat, cp, head -c, tail -c, dd with offsets, sha256sum, file and getfattr -d")
    func coreutils() throws {
        let image = try Fixtures.mediumJPEG()
        var response = OriginResponse.ok(image, contentType: "image/jpeg")
        response.headers.append(("ETag", "\"e1\""))
        try withMountedOrigin { origin, mount in
            origin.route("/photo.jpg", response)
            let file = mount.path(origin.baseURL + "/photo.jpg")
            let original = "\(mount.root)/original.jpg"
            try Data(image).write(to: URL(fileURLWithPath: original))
            #expect(try sh("ls -l '\(file)'").output.split(separator: " ")[4] == "\(image.count)")
            #expect(try sh("stat -c %s '\(file)'").output == "\(image.count)\n")
            #expect(try sh("cat '\(file)' | sha256sum").output.hasPrefix(Fixtures.sha256(image)))
            #expect(try sh("sha256sum < '\(file)'").output.hasPrefix(Fixtures.sha256(image)))
            #expect(
                try sh("cp '\(file)' '\(mount.root)/copy.jpg' && cmp '\(mount.root)/copy.jpg' '\(original)'").status
                    == 0)
            #expect(try same("head -c 1000 '\(file)'", "head -c 1000 '\(original)'"))
            #expect(
                try sh(
                    "tail -c 1000 '\(file)' > '\(mount.root)/tail' && tail -c 1000 '\(original)' | cmp - "
                        + "'\(mount.root)/tail'"
                ).status == 0)
            #expect(
                try same(
                    "dd if='\(file)' bs=1 skip=12345 count=777 status=none",
                    "dd if='\(original)' bs=1 skip=12345 count=777 status=none"))
            #expect(
                try same(
                    "dd if='\(file)' bs=4096 skip=7 count=3 status=none",
                    "dd if='\(original)' bs=4096 skip=7 count=3 status=none"))
            #expect(try sh("file -b '\(file)'").output.hasPrefix("JPEG image data"))
            let attributes = try sh("getfattr -d '\(file)'").output
            #expect(attributes.contains("user.imgfs.url=\"\(origin.baseURL)/photo.jpg\""))
            #expect(attributes.contains("user.imgfs.content_type=\"image/jpeg\""))
            #expect(attributes.contains("user.imgfs.size=\"\(image.count)\""))
            #expect(attributes.contains("user.imgfs.source=\"memory\""))
            #expect(attributes.contains("user.imgfs.etag=\"\\\"e1\\\"\""))
            #expect(attributes.contains("user.imgfs.fetched_at=") && attributes.contains("user.imgfs.expires_at="))
            #expect(origin.requestCount("/photo.jpg") == 1)
        }
    }

    @Test(
        "after a failure imgfs why (the mount's user.imgfs.error) says why in plain words, and asking fetches nothing")
    func errorAttribute() throws {
        try withMountedOrigin { origin, mount in
            origin.route("/page.png", .ok(Array("<!DOCTYPE html><html>hello</html>".utf8), contentType: "text/html"))
            let cases = [("/missing.png", "HTTP 404 Not Found"), ("/page.png", "not an image: the body is HTML")]
            for (path, expected) in cases {
                let file = mount.path(origin.baseURL + path)
                #expect(try sh("cat '\(file)' > /dev/null").status != 0)
                let why = try sh(
                    "'\(MountedImgfs.binary)' why --mount '\(mount.mountPoint)' '\(origin.baseURL)\(path)'"
                )
                .output
                #expect(why.hasPrefix("\(origin.baseURL)\(path): \(expected)"), "\(path): \(why)")
            }
            let before = origin.totalRequests
            let key = try ImageURL(origin.baseURL + "/missing.png").cacheKey
            for _ in 0..<3 {
                let value = try sh(
                    "getfattr --absolute-names --only-values -n user.imgfs.error.\(key) '\(mount.mountPoint)/.imgfs'")
                #expect(value.output == "HTTP 404 Not Found")
                #expect(
                    try sh("'\(MountedImgfs.binary)' why --mount '\(mount.mountPoint)' '\(origin.baseURL)/page.png'")
                        .status
                        == 0)
            }
            #expect(origin.totalRequests == before, "asking why fetches nothing")
        }
    }

    @Test(
        ".imgfs/stats.json, imgfs stats and .imgfs/metrics (Prometheus text) tell hits, misses, bytes, joins and errors"
    )
    func statistics() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/s.png", .ok(icon, contentType: "image/png"))
            for _ in 0..<3 { #expect(PosixFile.read(mount.path(origin.baseURL + "/s.png")) == .success(icon)) }
            #expect(PosixFile.read(mount.path(origin.baseURL + "/gone.png")) == .failure(Errno(ENOENT)))
            let stats = try sh("'\(MountedImgfs.binary)' stats --json '\(mount.mountPoint)'")
            #expect(stats.status == 0 && stats.output.contains("\"memory_bytes\" : \(icon.count)"))
            #expect(stats.output.contains("\"http_404\" : 1"))
            let metrics = try String(contentsOfFile: mount.mountPoint + "/.imgfs/metrics", encoding: .utf8)
            #expect(metrics.contains("# TYPE imgfs_cache_hits_total counter"))
            #expect(metrics.contains("imgfs_cache_bytes{tier=\"memory\"} \(icon.count)"))
            #expect(metrics.contains("imgfs_errors_total{kind=\"http_404\"} 1"))
            #expect(metrics.contains("imgfs_transfers_total 2"))
            #expect(metrics.split(separator: "\n").allSatisfy { $0.hasPrefix("#") || $0.hasPrefix("imgfs_") })
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/.imgfs").sorted() == [
                    "metrics", "stats.json"
                ])
        }
    }

    @Test("ImageMagick identify reports the right format and dimensions for PNG, JPEG, GIF and WebP through the mount")
    func imageMagick() throws {
        let work = "/tmp/imgfs-im-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        try Data(try Fixtures.smallPNGs(1)[0]).write(to: URL(fileURLWithPath: "\(work)/a.png"))
        try Data(try Fixtures.mediumJPEG()).write(to: URL(fileURLWithPath: "\(work)/a.jpg"))
        #expect(
            try sh("convert '\(work)/a.png' '\(work)/a.gif' && cwebp -quiet '\(work)/a.png' -o '\(work)/a.webp'").status
                == 0)
        try withMountedOrigin { origin, mount in
            for name in ["a.png", "a.jpg", "a.gif", "a.webp"] {
                let bytes = [UInt8](FileManager.default.contents(atPath: "\(work)/\(name)") ?? Data())
                origin.route("/\(name)", .ok(bytes, contentType: "image/*"))
            }
            for (name, format) in [("a.png", "PNG"), ("a.jpg", "JPEG"), ("a.gif", "GIF"), ("a.webp", "WEBP")] {
                let expected = try sh("identify -format '%m %w %h' '\(work)/\(name)' 2>/dev/null").output
                let seen = try sh(
                    "identify -format '%m %w %h' '\(mount.path(origin.baseURL + "/" + name))' 2>/dev/null")
                #expect(
                    seen.status == 0 && seen.output == expected && expected.hasPrefix(format),
                    "\(name): \(seen.output) vs \(expected)")
            }
        }
    }

    @Test("Python: Pillow opens and decodes files through the mount, and mmap maps them")
    func python() throws {
        let images = try [Fixtures.smallPNGs(1)[0], Fixtures.largeJPEG()]
        try withMountedOrigin { origin, mount in
            for (index, image) in images.enumerated() { origin.route("/p\(index)", .ok(image, contentType: "image/*")) }
            let script = """
                import hashlib, mmap, sys
                from PIL import Image
                for path in sys.argv[1:]:
                    with Image.open(path) as image:
                        image.load()
                        print(image.format, image.size[0], image.size[1])
                    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        print(hashlib.sha256(m).hexdigest(), len(m))
                """
            try script.write(toFile: "\(mount.root)/check.py", atomically: true, encoding: .utf8)
            let paths = images.indices.map { "'\(mount.path("\(origin.baseURL)/p\($0)"))'" }.joined(separator: " ")
            let run = try sh("python3 '\(mount.root)/check.py' \(paths)")
            #expect(run.status == 0, "\(run.output)")
            let lines = run.output.split(separator: "\n")
            #expect(lines.count == 4)
            #expect(lines.first?.hasPrefix("PNG ") == true && lines.dropFirst(2).first?.hasPrefix("JPEG ") == true)
            #expect(lines.dropFirst().first == "\(Fixtures.sha256(images[0])) \(images[0].count)")
            #expect(lines.last == "\(Fixtures.sha256(images[1])) \(images[1].count)")
        }
    }

    @Test("a name ending in an encoded #.png opens the same image with one fetch")
    func fragmentExtension() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/noext", .ok(image, contentType: "image/png"))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/noext#.png")) == .success(image))
            #expect(PosixFile.read(mount.path(origin.baseURL + "/noext")) == .success(image))
            #expect(origin.requestCount("/noext") == 1)
            #expect(origin.requests().allSatisfy { !$0.path.contains("#") }, "the fragment is never sent")
        }
    }

    @Test("an image viewer (feh under Xvfb) shows a file from the mount: the screenshot is not blank")
    func viewer() throws {
        try withMountedOrigin { origin, mount in
            origin.route("/view.jpg", .ok(try Fixtures.mediumJPEG(), contentType: "image/jpeg"))
            let display = try VirtualDisplay(width: 640, height: 480)
            defer { display.stop() }
            let colours = try display.settledScreenshot(
                of: "/usr/bin/feh", ["-g", "640x480", "-Z", mount.path(origin.baseURL + "/view.jpg")],
                to: "\(mount.root)/shot.png", minimumColours: 1000, log: "\(mount.root)/feh.log")
            #expect(colours > 1000, "distinct colours in the screenshot: \(colours)")
        }
    }
}
