import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 38, items 3 to 5, through a real mount and real libvips: variants whose extension is their type (`file`,
/// GIO and the name agree), format views `fmt/jpeg/` and `fmt/png/` for programs that cannot read the original,
/// failed variants that do not exist, and exact sizes `thumb/<W>x<H>/`.
@Suite("Variant formats", .serialized, .enabled(if: FuseAvailability.available))
struct VariantFormatTests {
    /// The test images, made by Pillow, libvips and ImageMagick in a scratch directory: name, bytes.
    private func originals(_ images: ThumbnailImages) throws -> [(String, [UInt8])] {
        _ = try PillowProbe.run(PillowProbe.halves, ["\(images.directory)/halves.png"])
        try images.sh("vips copy halves.png 'halves.avif[compression=av1]' && vips copy halves.png halves.heic")
        // CMYK JPEGs: one with an embedded CMYK profile (libvips), one without (ImageMagick's plain conversion).
        try images.sh("vips icc_export halves.png cmyk-profile.jpg --output-profile cmyk")
        try images.sh("convert halves.png -colorspace cmyk cmyk-plain.jpg")
        try images.sh("convert -size 300x200 xc:red -size 300x200 xc:lime -loop 0 -delay 10 anim.gif")
        try images.sh("convert halves.png halves.tif && convert halves.png -quality 90 halves.jpg")
        try images.sh("convert halves.png halves.webp")
        try images.sh("convert -size 300x200 xc:none -fill 'rgba(255,0,0,0.5)' -draw 'circle 150,100 150,20' alpha.png")
        let rotated = try rotatedJPEG(images)
        return try [
            "halves.png", "halves.avif", "halves.heic", "cmyk-profile.jpg", "cmyk-plain.jpg", "anim.gif", "halves.tif",
            "halves.jpg", "halves.webp", "alpha.png"
        ].map { ($0, try images.bytes($0)) } + [("rotated.jpg", rotated)]
    }

    /// 640 x 480 pixels stored, left half red and right half blue, with EXIF orientation 6: shown upright it is
    /// 480 x 640 with the top half red.
    private func rotatedJPEG(_ images: ThumbnailImages) throws -> [UInt8] {
        let script = """
            from PIL import Image
            import sys
            image = Image.new('RGB', (640, 480), (0, 0, 255))
            image.paste((255, 0, 0), (0, 0, 320, 480))
            exif = Image.Exif()
            exif[0x0112] = 6
            image.save(sys.argv[1], quality=95, exif=exif.tobytes())
            """
        _ = try PillowProbe.run(script, ["\(images.directory)/rotated.jpg"])
        return try images.bytes("rotated.jpg")
    }

    /// `file --brief --mime-type` of a path (HEIF's two names as one: `file` says image/heic, GIO image/heif).
    private func mimeType(_ path: String) throws -> String {
        let type = try ChildProcess.run("/usr/bin/file", ["--brief", "--mime-type", path]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return type == "image/heif" ? "image/heic" : type
    }

    /// GIO's content type of a path (`gio info -a standard::content-type`).
    private func gioType(_ path: String) throws -> String {
        let output = try ChildProcess.run("/usr/bin/gio", ["info", "-a", "standard::content-type", path]).output
        let line = output.split(separator: "\n").first { $0.contains("standard::content-type:") } ?? ""
        let type = line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "none"
        return type == "image/heif" ? "image/heic" : type
    }

    /// The media type an extension names, as `file` reports it.
    private static let typeByExtension = [
        "jpg": "image/jpeg", "png": "image/png", "webp": "image/webp", "gif": "image/gif", "tif": "image/tiff",
        "avif": "image/avif", "heic": "image/heic"
    ]

    @Test("file, GIO and the extension agree for every variant kind: thumb/<px>/, thumb/<W>x<H>/, fmt/jpeg/, fmt/png/")
    func namesTellTheTruth() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gio") else {
            throw Fixtures.Missing(description: "need gio: apt-get install libglib2.0-bin (mount-scripts/install-deps)")
        }
        let images = try ThumbnailImages()
        let bodies = try originals(images)
        try withMountedOrigin(["--thumb-sizes", "64,256,224x224"]) { origin, mount in
            for (name, body) in bodies { origin.route("/\(name)", .ok(body, contentType: "image/*")) }
            origin.route("/raw/noext", .ok(try images.bytes("alpha.png"), contentType: "image/png"))
            var checked = 0
            for directory in ["thumb/256", "thumb/224x224", "fmt/jpeg", "fmt/png"] {
                for (name, _) in bodies {
                    let base = "\(mount.mountPoint)/\(directory)/\(NameCodec.encode(origin.baseURL + "/" + name))"
                    let ext = String(name.split(separator: ".").last!)
                    // Under fmt/ a name with another type's extension is given that view's by a fragment.
                    let path: String
                    if directory.hasPrefix("fmt/") {
                        let view = directory == "fmt/jpeg" ? "jpg" : "png"
                        path = ext == view ? base : base + "%23." + view
                        if ext != view {
                            #expect(PosixFile.read(base).map(\.count) == .failure(Errno(ENOENT)), "\(base) lies")
                        }
                    } else {
                        path = base
                    }
                    let expected =
                        directory.hasPrefix("fmt/")
                        ? (directory == "fmt/jpeg" ? "image/jpeg" : "image/png") : Self.typeByExtension[ext]!
                    #expect(try mimeType(path) == expected, "file of \(path)")
                    #expect(try gioType(path) == expected, "GIO of \(path)")
                    checked += 1
                }
            }
            #expect(checked == 4 * bodies.count)
            // No image extension: the original's family decides (PNG with alpha stays PNG), and nothing disagrees.
            let plain = "\(mount.mountPoint)/thumb/256/\(NameCodec.encode(origin.baseURL + "/raw/noext"))"
            #expect(try mimeType(plain) == "image/png")
            #expect(try gioType(plain) == "image/png")
            // An extension of a type imgfs does not write asks for what cannot be had.
            #expect(
                PosixFile.read("\(mount.mountPoint)/thumb/256/\(NameCodec.encode(origin.baseURL + "/halves.png#.bmp"))")
                    .map(\.count) == .failure(Errno(ENOENT)))
            // Every listed name keeps the rule: its extension (or its fragment's) is its type.
            for directory in ["thumb/256", "fmt/jpeg", "fmt/png"] {
                let names = try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/\(directory)")
                #expect(names.count >= bodies.count, "\(directory): \(names)")
                for name in names where name.contains(".") {
                    let ext = String(name.split(separator: ".").last!)
                    guard let expected = Self.typeByExtension[ext == "jpeg" ? "jpg" : ext] else { continue }
                    #expect(
                        try mimeType("\(mount.mountPoint)/\(directory)/\(name)") == expected, "\(directory)/\(name)")
                }
            }
        }
    }

    @Test("AVIF, HEIC, CMYK JPEGs, animated GIF, EXIF-rotated JPEG: fmt/jpeg/ gives upright baseline JPEGs; one GET")
    func formatViews() throws {
        let images = try ThumbnailImages()
        let bodies = try originals(images)
        try withMountedOrigin(["--thumb-sizes", "64,256,224x224"]) { origin, mount in
            for (name, body) in bodies { origin.route("/\(name)", .ok(body, contentType: "image/*")) }
            let cases: [(String, String, [String])] = [
                // name, expected size, points that must be red then blue (or red, red for the GIF's first frame)
                ("halves.avif", "600 400", ["100,200", "500,200"]),
                ("halves.heic", "600 400", ["100,200", "500,200"]),
                ("cmyk-profile.jpg", "600 400", ["100,200", "500,200"]),
                ("cmyk-plain.jpg", "600 400", ["100,200", "500,200"]),
                ("halves.tif", "600 400", ["100,200", "500,200"]),
                ("halves.webp", "600 400", ["100,200", "500,200"]),
                ("rotated.jpg", "480 640", ["240,100", "240,540"]),
                ("anim.gif", "300 200", ["150,100"])
            ]
            for (name, size, points) in cases {
                let url = origin.baseURL + "/" + name
                let name = NameCodec.encode(url + (name.hasSuffix(".jpg") ? "" : "#.jpg"))
                let path = "\(mount.mountPoint)/fmt/jpeg/\(name)"
                let seen = try PillowProbe.run(PillowProbe.inspect, [path] + points)
                let parts = seen.split(separator: " ").map(String.init)
                #expect(parts.count == 4 + points.count, "\(url): \(seen)")
                guard parts.count == 4 + points.count else { continue }
                #expect(parts[0] == "JPEG" && "\(parts[1]) \(parts[2])" == size, "\(url): \(seen)")
                #expect(parts[3] == "baseline", "\(url): \(seen)")
                let colours = parts[4...].map { $0.split(separator: ",").compactMap { Int($0) } }
                #expect(colours[0].count == 3 && colours[0][0] > 180 && colours[0][2] < 90, "red first: \(url) \(seen)")
                if colours.count > 1 {
                    #expect(colours[1].count == 3 && colours[1][2] > 100 && colours[1][0] < 90, "blue: \(url) \(seen)")
                }
            }
            // PNG with alpha: fmt/png/ keeps it, fmt/jpeg/ flattens it onto white.
            let alpha = origin.baseURL + "/alpha.png"
            let png = try PillowProbe.run(
                PillowProbe.inspect, ["\(mount.mountPoint)/fmt/png/\(NameCodec.encode(alpha))", "2,2"])
            #expect(png.hasPrefix("PNG 300 200 none"), "\(png)")
            let flat = try PillowProbe.run(
                PillowProbe.inspect,
                ["\(mount.mountPoint)/fmt/jpeg/\(NameCodec.encode(alpha + "#.jpg"))", "2,2", "150,100"])
            let corners = flat.split(separator: " ").dropFirst(4).map {
                $0.split(separator: ",").compactMap { Int($0) }
            }
            #expect(
                flat.hasPrefix("JPEG 300 200 baseline") && corners.first?.allSatisfy { $0 > 245 } == true, "\(flat)")
            // One GET of each original, however many views of it were read (and read again).
            for (name, _, _) in cases {
                let url = origin.baseURL + "/" + name
                for view in ["thumb/256/", "thumb/224x224/", "thumb/64/", "fmt/png/"] {
                    let suffix = view == "fmt/png/" && !name.hasSuffix(".png") ? "#.png" : ""
                    let path = "\(mount.mountPoint)/\(view)\(NameCodec.encode(url + suffix))"
                    #expect((try? PosixFile.read(path).get().count) ?? 0 > 0, "\(path)")
                }
                #expect(origin.requestCount("/\(name)") == 1, "\(name)")
            }
        }
    }

    @Test("a failed variant does not exist: not found, not an empty file, not listed; imgfs why says why")
    func failedVariant() throws {
        let images = try ThumbnailImages()
        _ = try PillowProbe.run(PillowProbe.halves, ["\(images.directory)/halves.png"])
        try images.sh("convert halves.png -quality 90 whole.jpg")
        let whole = try images.bytes("whole.jpg")
        try withMountedOrigin { origin, mount in
            origin.route("/cut.jpg", .ok(Array(whole.prefix(whole.count / 2)), contentType: "image/jpeg"))
            let url = origin.baseURL + "/cut.jpg"
            let thumb = "\(mount.mountPoint)/thumb/256/\(NameCodec.encode(url))"
            let view = "\(mount.mountPoint)/fmt/png/\(NameCodec.encode(url + "#.png"))"
            for path in [thumb, view] {
                // The first stat waits for the decode and fails with its error; later lookups know it at once.
                #expect(PosixFile.size(path) == .failure(Errno(EIO)), "\(path)")
                var status = stat()
                #expect(stat(path, &status) != 0, "\(path) exists")
                #expect(try ChildProcess.run("/bin/sh", ["-c", "test -e \"$0\"", path]).status != 0, "test -e")
                let isFile = try PillowProbe.run("import os, sys; print(os.path.isfile(sys.argv[1]))", [path])
                #expect(isFile == "False", "\(path)")
                #expect(PosixFile.read(path).map(\.count) != .success(0), "never an empty file: \(path)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/thumb/256").isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/fmt/png").isEmpty)
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("\(url) thumb/256 (jpeg): cannot decode the original"), "\(why.output)")
            #expect(why.output.contains("\(url) fmt/png: cannot decode the original"), "\(why.output)")
            #expect(why.status == 0, "\(why.output)")
            // The original itself is served as it is.
            #expect(PosixFile.read(mount.path(url)).map(\.count) == .success(whole.count / 2))
        }
    }

    @Test("fmt/jpeg/ of an image that must be turned holds it whole: over the decode budget it is EFBIG, and says so")
    func turnedWholeImageIsBudgeted() throws {
        let images = try ThumbnailImages()
        let script = """
            from PIL import Image
            import sys
            image = Image.new('RGB', (2000, 1500), (0, 0, 255))
            exif = Image.Exif()
            exif[0x0112] = int(sys.argv[2])
            image.save(sys.argv[1], quality=90, exif=exif.tobytes())
            """
        _ = try PillowProbe.run(script, ["\(images.directory)/turned.jpg", "6"])
        _ = try PillowProbe.run(script, ["\(images.directory)/upright.jpg", "1"])
        try withMountedOrigin(["--memory-limit", "4M"]) { origin, mount in
            for name in ["turned.jpg", "upright.jpg"] {
                origin.route("/\(name)", .ok(try images.bytes(name), contentType: "image/jpeg"))
            }
            let turned = origin.baseURL + "/turned.jpg"
            // 2000 x 1500 x 3 bytes turned in memory is over the 4 MiB budget; the upright one streams.
            let view = "\(mount.mountPoint)/fmt/jpeg/\(NameCodec.encode(turned))"
            #expect(PosixFile.read(view).map(\.count) == .failure(Errno(EFBIG)))
            let upright = "\(mount.mountPoint)/fmt/jpeg/\(NameCodec.encode(origin.baseURL + "/upright.jpg"))"
            #expect((try? PosixFile.read(upright).get().count) ?? 0 > 0)
            // Its thumbnail is small: made.
            #expect((try? PosixFile.read(mount.thumbnail(256, turned)).get().count) ?? 0 > 0)
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, turned])
            #expect(
                why.output.contains("fmt/jpeg: decode refused: image turned upright (EXIF orientation 6)"),
                "\(why.output)")
        }
    }

    @Test("thumb/224x224/ is exactly 224 x 224 for wide, tall and small originals; attention crop by --tune")
    func exactSizes() throws {
        let images = try ThumbnailImages()
        _ = try PillowProbe.run(PillowProbe.halves, ["\(images.directory)/wide.png"])
        try images.sh("convert -size 300x900 gradient:red-blue tall.jpg && convert -size 40x30 xc:green small.jpg")
        // A grey field with one busy, saturated corner: the attention crop moves towards it, the centre crop does not.
        try images.sh(
            "convert -size 900x300 xc:gray50 -fill red -draw 'rectangle 700,0 900,300' "
                + "-fill yellow -draw 'circle 800,150 800,60' busy.jpg")
        for crop in ["centre", "attention"] {
            try withMountedOrigin(["--thumb-sizes", "224x224,100x50", "--tune", "thumb-crop=\(crop)"]) {
                origin, mount in
                for name in ["wide.png", "tall.jpg", "small.jpg", "busy.jpg"] {
                    origin.route("/\(name)", .ok(try images.bytes(name), contentType: "image/*"))
                }
                for name in ["wide.png", "tall.jpg", "small.jpg", "busy.jpg"] {
                    let url = origin.baseURL + "/" + name
                    let square = try images.write(
                        try PosixFile.read(mount.exactThumbnail(224, 224, url)).get(), "s" + name)
                    #expect(try images.identify(square) == "\(name.hasSuffix(".png") ? "PNG" : "JPEG") 224 224")
                    let wide = try images.write(
                        try PosixFile.read(mount.exactThumbnail(100, 50, url)).get(), "w" + name)
                    #expect(try images.identify(wide).hasSuffix(" 100 50"), "\(name)")
                }
                // The busy corner is red: the centre crop of a 900 x 300 image shows grey in the middle, the
                // attention crop red or yellow there.
                let busy = try images.write(
                    try PosixFile.read(mount.exactThumbnail(224, 224, origin.baseURL + "/busy.jpg")).get(), "b.jpg")
                let middle = try images.identify(busy, "%[fx:int(255*p{112,112}.r)] %[fx:int(255*p{112,112}.b)]")
                let rgb = middle.split(separator: " ").compactMap { Int($0) }
                if crop == "centre" {
                    #expect(rgb.count == 2 && abs(rgb[0] - 127) < 20, "centre: \(middle)")
                } else {
                    #expect(rgb.count == 2 && rgb[0] > 200 && rgb[1] < 80, "attention: \(middle)")
                }
                // Only the configured exact sizes exist.
                #expect(
                    PosixFile.read(mount.exactThumbnail(225, 224, origin.baseURL + "/wide.png")).map(\.count)
                        == .failure(Errno(ENOENT)))
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/thumb").sorted()
                        == ["100x50", "224x224"])
            }
        }
    }
}

extension MountedImgfs {
    /// The full path of the exact-size variant `width` x `height` of `url` (`thumb/<W>x<H>/<plain name>`).
    fileprivate func exactThumbnail(_ width: Int, _ height: Int, _ url: String) -> String {
        "\(mountPoint)/thumb/\(width)x\(height)/\(NameCodec.encode(url))"
    }
}
