import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 17 through a real mount and real libvips: `thumb/<px>/<name>`, its formats, errors, sharing and caching.
@Suite("Thumbnails", .serialized, .enabled(if: FuseAvailability.available))
struct ThumbnailTests {
    private func thumb(_ mount: MountedImgfs, _ size: Int, _ url: String) -> String {
        "\(mount.mountPoint)/thumb/\(size)/\(NameCodec.encode(url))"
    }

    /// `user.imgfs.<name>` of a file, read by getfattr; nil when it has none.
    private func attribute(_ path: String, _ name: String) -> String? {
        let arguments = ["--absolute-names", "--only-values", "-n", "user.imgfs.\(name)", path]
        let result = try? ChildProcess.run("/usr/bin/getfattr", arguments)
        return result?.status == 0 ? result?.output : nil
    }

    @Test("JPEG, PNG with alpha, WebP, GIF (first frame) and an EXIF-rotated JPEG: sizes, formats, never enlarged")
    func formats() throws {
        let images = try ThumbnailImages()
        try images.sh("convert -size 300x200 xc:none -fill 'rgba(255,0,0,0.5)' -draw 'circle 150,100 150,20' alpha.png")
        try images.sh("convert -size 800x600 gradient:red-blue photo.webp")
        try images.sh("convert -size 300x200 xc:red -size 300x200 xc:lime -loop 0 -delay 10 anim.gif")
        let jpeg = try Fixtures.largeJPEG()
        let jpegPath = try images.write(jpeg, "large.jpg")
        let (width, height) = try { () throws -> (Int, Int) in
            let parts = try images.identify(jpegPath, "%w %h").split(separator: " ").compactMap { Int($0) }
            return (parts[0], parts[1])
        }()
        let bodies: [(String, [UInt8])] = try [
            ("large.jpg", jpeg), ("alpha.png", images.bytes("alpha.png")), ("photo.webp", images.bytes("photo.webp")),
            ("anim.gif", images.bytes("anim.gif")),
            ("rotated.jpg", images.exifRotatedJPEG(width: 640, height: 480, orientation: 6))
        ]
        try withMountedOrigin { origin, mount in
            for (name, body) in bodies { origin.route("/\(name)", .ok(body, contentType: "image/*")) }
            let longer = Double(max(width, height))
            let scaled = { (side: Int) in Int((Double(side) * 256 / longer).rounded()) }
            let expectedJPEG = "JPEG \(scaled(width)) \(scaled(height))"
            #expect(try images.identify(thumb(mount, 256, origin.baseURL + "/large.jpg")) == expectedJPEG)
            #expect(try images.identify(thumb(mount, 64, origin.baseURL + "/large.jpg")).hasPrefix("JPEG"))
            // Transparency kept: PNG with an alpha channel, scaled 300x200 -> 256x171.
            let alpha = thumb(mount, 256, origin.baseURL + "/alpha.png")
            #expect(try images.identify(alpha, "%m %w %h %[channels]") == "PNG 256 171 srgba")
            #expect(attribute(alpha, "content_type") == "image/png")
            // Never enlarged: at 1024 the 300x200 original keeps its size.
            #expect(try images.identify(thumb(mount, 1024, origin.baseURL + "/alpha.png")) == "PNG 300 200")
            // stat of a variant not made yet waits for it: the size is the variant's, before anything is read.
            let webp = thumb(mount, 256, origin.baseURL + "/photo.webp")
            let announced = PosixFile.size(webp)
            #expect(announced == PosixFile.read(webp).map(\.count) && (try? announced.get()) ?? 0 > 0)
            #expect(try images.identify(webp) == "WEBP 256 192")
            // The first frame (red), as a GIF (its name says GIF).
            let gif = thumb(mount, 128, origin.baseURL + "/anim.gif")
            #expect(try images.identify(gif) == "GIF 128 85")
            let pixel = try images.identify(gif, "%[fx:int(255*p{64,40}.r)] %[fx:int(255*p{64,40}.g)]")
            let rgb = pixel.split(separator: " ").compactMap { Int($0) }
            #expect(rgb.count == 2 && rgb[0] > 200 && rgb[1] < 60, "first frame is red: \(pixel)")
            // Orientation 6: the 640x480 file is shown 480x640, and the variant is upright with no orientation left.
            let rotated = thumb(mount, 256, origin.baseURL + "/rotated.jpg")
            #expect(try images.identify(rotated, "%m %w %h %[orientation]") == "JPEG 192 256 Undefined")
            #expect(attribute(rotated, "url") == origin.baseURL + "/rotated.jpg")
            #expect(attribute(rotated, "thumb_size") == "256")
            #expect(attribute(rotated, "source") == "memory")
            #expect(Int(attribute(rotated, "size") ?? "") == (try? PosixFile.size(rotated).get()))
            // Only the configured sizes exist.
            #expect(PosixFile.read(thumb(mount, 100, origin.baseURL + "/large.jpg")) == .failure(Errno(ENOENT)))
        }
    }

    @Test("bomb: EFBIG, truncated JPEG: EIO, SVG: EMEDIUMTYPE, 404 original: ENOENT; the reason in imgfs why")
    func errors() throws {
        let images = try ThumbnailImages()
        try images.sh("convert -size 1600x1200 plasma:fractal -quality 90 noise.jpg")
        let noise = try images.bytes("noise.jpg")
        let svg = #"<svg xmlns="http://www.w3.org/2000/svg" width="900" height="900"><rect width="9"/></svg>"#
        try withMountedOrigin(["--log-level", "debug"]) { origin, mount in
            origin.route("/bomb.png", .ok(try images.bomb(), contentType: "image/png"))
            origin.route("/cut.jpg", .ok(Array(noise.prefix(noise.count / 2)), contentType: "image/jpeg"))
            origin.route("/vector.svg", .ok(Array(svg.utf8), contentType: "image/svg+xml"))
            let cases: [(String, Int32, String)] = [
                ("/bomb.png", EFBIG, "decompression bomb refused: 30000 x 30000 pixels is over the limit of 100000000"),
                ("/cut.jpg", EIO, "Premature end of"),
                // A .svg name asks for an SVG thumbnail, which imgfs does not write: not found; as PNG it is tried.
                ("/vector.svg#.png", EMEDIUMTYPE, "not rasterized"),
                ("/missing.png", ENOENT, "HTTP 404")
            ]
            for (path, code, reason) in cases {
                let file = thumb(mount, 256, origin.baseURL + path)
                #expect(PosixFile.read(file).map(\.count) == .failure(Errno(code)), "\(path)")
                // A failed variant has no file: its reason is in imgfs why (the variant's own, or the original's).
                let why = try ChildProcess.run(
                    MountedImgfs.binary, ["why", "--mount", mount.mountPoint, origin.baseURL + path])
                #expect(why.output.contains(reason), "\(path): \(why.output)")
                #expect(PosixFile.read(file).map(\.count) == .failure(Errno(code)), "\(path) again")
            }
            #expect(
                PosixFile.read(thumb(mount, 256, origin.baseURL + "/vector.svg")).map(\.count)
                    == .failure(Errno(ENOENT)))
            // Nothing half-made was cached.
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/thumb/256").isEmpty)
            // The original is served as it is: only its variant failed.
            #expect(PosixFile.read(mount.path(origin.baseURL + "/cut.jpg")).map(\.count) == .success(noise.count / 2))
        }
    }

    @Test("libvips is loaded by the first variant, not by the mount, an image read or an imgfs command")
    func libvipsLoadedOnDemand() throws {
        let images = try ThumbnailImages()
        let jpeg = try Fixtures.largeJPEG()
        // Read by cat: a /proc file's size is 0, and Foundation's reads of a whole file trust the size.
        let loadsLibvips = { (pid: pid_t) throws -> Bool in
            let maps = try ChildProcess.run("/bin/cat", ["/proc/\(pid)/maps"])
            #expect(maps.status == 0 && maps.output.contains("/libcurl"))
            return maps.output.contains("/libvips.so")
        }
        try withMountedOrigin { origin, mount in
            origin.route("/photo.jpg", .ok(jpeg, contentType: "image/jpeg"))
            let url = origin.baseURL + "/photo.jpg"
            #expect(PosixFile.read(mount.path(url)).map(\.count) == .success(jpeg.count))
            #expect(try !loadsLibvips(mount.process.pid), "libvips loaded before any variant was asked for")
            // An imgfs command does not load it either (its startup would pay ~20 ms for it).
            let command = try ChildProcess.run(
                "/usr/bin/env", ["LD_DEBUG=files", MountedImgfs.binary, "why", "--mount", mount.mountPoint, url])
            #expect(command.output.contains("no failure known"), "\(command.output)")
            #expect(command.output.contains("libcurl") && !command.output.contains("libvips"))
            let path = try images.write(try PosixFile.read(thumb(mount, 64, url)).get(), "t64.jpg")
            #expect(try images.identify(path, "%m %[fx:max(w,h)]") == "JPEG 64")
            #expect(try loadsLibvips(mount.process.pid))
        }
    }

    @Test("3 sizes x 16 readers at once of an image not fetched yet: one GET, every variant right")
    func oneTransfer() throws {
        let images = try ThumbnailImages()
        let jpeg = try Fixtures.largeJPEG()
        // Slow enough that every reader arrives while the original is still coming.
        try withMountedOrigin { origin, mount in
            origin.route(
                "/shared.jpg",
                OriginResponse(
                    headers: [("Content-Type", "image/jpeg")], body: jpeg,
                    bytesPerSecond: jpeg.count * 2))
            let sizes = [64, 256, 1024]
            let url = origin.baseURL + "/shared.jpg"
            let results = ParallelThreads.run(48) { index in PosixFile.read(thumb(mount, sizes[index % 3], url)) }
            #expect(origin.requestCount("/shared.jpg") == 1)
            for (index, result) in results.enumerated() {
                let bytes = try result.get()
                #expect(bytes == (try PosixFile.read(thumb(mount, sizes[index % 3], url)).get()), "reader \(index)")
            }
            for size in sizes {
                let path = try images.write(try PosixFile.read(thumb(mount, size, url)).get(), "t\(size).jpg")
                #expect(try images.identify(path, "%m %[fx:max(w,h)]") == "JPEG \(size)")
            }
            #expect(origin.requestCount("/shared.jpg") == 1)
        }
    }

    @Test("variants live on disk: they survive a remount with the origin gone; ls lists them, rm evicts one")
    func survivesRemount() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/kept.jpg", .ok(try Fixtures.mediumJPEG(), contentType: "image/jpeg"))
        let cache = "/tmp/imgfs-thumb-cache-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let url = origin.baseURL + "/kept.jpg"
        let first = try MountedImgfs(cacheDirectory: cache)
        let made = try PosixFile.read(thumb(first, 128, url)).get()
        first.stop()
        origin.removeAllRoutes()
        origin.resetCounters()
        // Not from the original: its disk copy is removed and the policy forbids the network, so only the variant's
        // own entry can answer.
        try FileManager.default.removeItem(atPath: "\(cache)/v1")
        let second = try MountedImgfs(arguments: ["--policy", "cache-only"], cacheDirectory: cache)
        defer { second.stop() }
        #expect(PosixFile.read(second.path(url)) == .failure(Errno(ENOENT)), "the original is gone")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(second.mountPoint)/thumb/128")
                == [NameCodec.encode(url)])
        #expect(PosixFile.read(thumb(second, 128, url)) == .success(made))
        #expect(attribute(thumb(second, 128, url), "source") == "memory")
        #expect(origin.totalRequests == 0)
        #expect(unlink(thumb(second, 128, url)) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(second.mountPoint)/thumb/128").isEmpty)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(second.mountPoint)/img").isEmpty,
            "variants are not images")
    }

    @Test("a refreshed original with a new ETag makes its variant again; an unchanged one (304) keeps it")
    func newETag() throws {
        let images = try ThumbnailImages()
        try images.sh("convert -size 400x400 xc:red square.jpg && convert -size 400x200 xc:blue wide.jpg")
        let versions = [try images.bytes("square.jpg"), try images.bytes("wide.jpg")]
        let current = Locked(0)
        try withMountedOrigin(["--expire", "1s"]) { origin, mount throws in
            origin.route(prefix: "/changing.jpg") { request in
                let version = current.withLock { $0 }
                if request.header("If-None-Match") == "\"v\(version)\"" {
                    return OriginResponse(status: 304, headers: [("ETag", "\"v\(version)\"")])
                }
                var response = OriginResponse.ok(versions[version], contentType: "image/jpeg")
                response.headers.append(("ETag", "\"v\(version)\""))
                return response
            }
            let file = thumb(mount, 256, origin.baseURL + "/changing.jpg")
            let path = { (name: String) throws -> String in try images.write(try PosixFile.read(file).get(), name) }
            #expect(try images.identify(try path("a.jpg")) == "JPEG 256 256")
            // Expired, unchanged: revalidated (304), the variant kept.
            Poll.elapse(1.2)  // past the 1 s expiry
            #expect(try images.identify(try path("b.jpg")) == "JPEG 256 256")
            #expect(origin.requests().filter { $0.header("If-None-Match") != nil }.count >= 1)
            #expect(!mount.log.contains("variant made: 256x128"))
            current.withLock { $0 = 1 }
            Poll.elapse(1.2)  // past the 1 s expiry
            #expect(try images.identify(try path("c.jpg")) == "JPEG 256 128")
            #expect(PosixFile.size(file) == .success(try images.bytes("c.jpg").count))
        }
    }
}
