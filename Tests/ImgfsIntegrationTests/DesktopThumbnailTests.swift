import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 38, items 1 and 2: thumbnails desktop programs find without reading originals (the shared repositories
/// `.sh_thumbnails/` of lists and hosts, and the user's cache written by `imgfs thumbnails --desktop`), stable mtimes,
/// and thumbnails by a list's readable names (`thumb/<px>/lists/NAME/`).
@Suite("Desktop thumbnails", .serialized, .enabled(if: FuseAvailability.available))
struct DesktopThumbnailTests {
    /// A list `demo` of two icons, a wallpaper (a JPEG larger than 1024 px), an image no decoder takes (a PNG
    /// signature, then noise) and a 404, with their names.
    private func demoList(_ fixture: ListFixture) throws -> [String] {
        fixture.origin.route("/w/wall.jpg", .ok(try Fixtures.largeJPEG(), contentType: "image/jpeg"))
        let noise =
            [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + (0..<4000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        fixture.origin.route("/w/noise.png", .ok(noise, contentType: "image/png"))
        fixture.origin.route("/w/gone.png", .status(404))
        let base = fixture.origin.baseURL
        let text = [
            fixture.url(1), "\(fixture.url(2))\tgrüne Wiese", "\(base)/w/wall.jpg", "\(base)/w/noise.png",
            "\(base)/w/gone.png"
        ].joined(separator: "\n")
        #expect(try fixture.add("demo", text + "\n", extra: ["--no-probe"]).status == 0)
        return ["00001-1.png", "00002-grüne-Wiese.png", "00003-wall.jpg", "00004-noise.png", "00005-gone.png"]
    }

    private func requirePython() throws {
        let check = try ChildProcess.run("/usr/bin/python3", ["-c", "import PIL"])
        guard check.status == 0 else {
            throw Fixtures.Missing(description: "need Pillow: apt-get install python3-pil (mount-scripts/install-deps)")
        }
    }

    @Test(".sh_thumbnails/<size>/<md5>.png: listed without the network, PNGs of the right size with the spec's keys")
    func sharedRepository() throws {
        try requirePython()
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let names = try demoList(fixture)
        let directory = "\(fixture.mount.mountPoint)/lists/demo"
        let digests = names.map { MD5.hex(of: Array($0.utf8)) + ".png" }
        #expect(try fixture.ls("lists/demo/.sh_thumbnails") == ["large", "normal", "x-large", "xx-large"])
        #expect(try fixture.ls("lists/demo/.sh_thumbnails/normal") == digests.sorted())
        #expect(fixture.origin.totalRequests == 0, "listing a shared repository touches no network")

        // Python checks every thumbnail: PNG, longest side, and the keys against stat of the entry.
        let script = """
            import hashlib, os, sys
            from PIL import Image
            folder = sys.argv[1]
            for size, px in (("normal", 128), ("large", 256), ("x-large", 512), ("xx-large", 1024)):
                for name in sys.argv[2:]:
                    try:
                        st = os.stat(os.path.join(folder, name))
                    except FileNotFoundError:
                        print(size, name, "no entry")
                        continue
                    path = os.path.join(folder, ".sh_thumbnails", size, hashlib.md5(name.encode()).hexdigest() + ".png")
                    try:
                        data = open(path, "rb").read()
                    except OSError as error:
                        print(size, name, "no thumbnail", error.errno)
                        continue
                    image = Image.open(path)
                    image.load()
                    with Image.open(os.path.join(folder, name)) as original:
                        want = min(px, max(original.size))
                    ok = (image.format == "PNG" and max(image.size) == want and len(data) == os.stat(path).st_size
                          and image.text.get("Thumb::MTime") == str(int(st.st_mtime))
                          and image.text.get("Thumb::Size") == str(st.st_size))
                    print(size, name, "ok" if ok else "bad", image.text.get("Thumb::URI"), image.size, image.text)
            """
        let python = try ChildProcess.run("/usr/bin/python3", ["-c", script, directory] + names, timeout: 120)
        let lines = python.output.split(separator: "\n").map(String.init)
        #expect(python.status == 0, "\(python.output)")
        for size in ["normal", "large", "x-large", "xx-large"] {
            #expect(lines.contains { $0.hasPrefix("\(size) 00001-1.png ok 00001-1.png (48, 48)") }, "\(python.output)")
            #expect(
                lines.contains { $0.hasPrefix("\(size) 00002-grüne-Wiese.png ok 00002-gr%C3%BCne-Wiese.png") },
                "\(python.output)")
            #expect(lines.contains { $0.hasPrefix("\(size) 00003-wall.jpg ok 00003-wall.jpg") }, "\(python.output)")
            #expect(lines.contains("\(size) 00004-noise.png no thumbnail 2"), "a failed thumbnail does not exist")
            #expect(lines.contains("\(size) 00005-gone.png no entry"), "\(python.output)")
        }
        #expect(fixture.origin.requestCount("/w/wall.jpg") == 1, "four sizes and the original's stat: one GET")

        // A host's folder has its repository too, under the host view's names.
        let host = "hosts/127.0.0.1:\(fixture.origin.port)"
        let hostNames = try fixture.ls(host)
        #expect(hostNames.count == 4, "\(hostNames)")
        #expect(
            try fixture.ls("\(host)/.sh_thumbnails/large")
                == hostNames.map { MD5.hex(of: Array($0.utf8)) + ".png" }.sorted())
        let wall = try #require(hostNames.first { $0.hasPrefix("wall-") })
        let wallSize = try Fixtures.largeJPEG().count
        let text = ThumbnailPNGText.read(
            "\(fixture.mount.mountPoint)/\(host)/.sh_thumbnails/large/\(MD5.hex(of: Array(wall.utf8))).png")
        #expect(text["Thumb::URI"] == wall && text["Thumb::Size"] == String(wallSize), "\(text)")
    }

    @Test(
        "imgfs thumbnails --desktop: gio finds every entry's thumbnail valid, after a remount too, reading no original"
    )
    func userCacheThroughGIO() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gio") else {
            throw Fixtures.Missing(description: "need gio: apt-get install libglib2.0-bin (mount-scripts/install-deps)")
        }
        let scratch = "/tmp/imgfs-test-\(getpid())-desktop-\(UUID().uuidString.prefix(6))"
        let cache = "\(scratch)/cache", xdg = "\(scratch)/xdg"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let fixture = try ListFixture(cacheDirectory: cache)
        defer { fixture.stop() }
        let names = try demoList(fixture)
        let env = ["XDG_CACHE_HOME=\(xdg)"]
        let run = try ChildProcess.run(
            "/usr/bin/env", env + [MountedImgfs.binary, "thumbnails", "--desktop", fixture.mount.mountPoint],
            timeout: 120)
        #expect(run.status == 0, "\(run.output)")
        #expect(
            run.output.contains("list demo: 5 entries, 3 thumbnailed, 0 already current, 1 failed (marked), 1 missing"),
            "\(run.output)")

        func gio(_ mount: MountedImgfs, _ name: String) throws -> String {
            let path = "\(mount.mountPoint)/lists/demo/\(name)"
            let attributes = "thumbnail::path,thumbnail::is-valid,thumbnail::failed"
            return try ChildProcess.run("/usr/bin/env", env + ["/usr/bin/gio", "info", "-a", attributes, path]).output
        }
        func expectValid(_ mount: MountedImgfs) throws {
            for name in names.prefix(3) {
                let info = try gio(mount, name)
                #expect(
                    info.contains("thumbnail::is-valid: TRUE") && info.contains("thumbnail::path: \(xdg)/"), "\(info)")
            }
            let noise = try gio(mount, names[3])
            #expect(noise.contains("thumbnail::failed: TRUE") && noise.contains("is-valid: TRUE"), "\(noise)")
        }
        let before = fixture.origin.totalRequests
        try expectValid(fixture.mount)
        #expect(fixture.origin.totalRequests == before, "gio read no original")

        // Thumb::URI is the entry's file:// URI exactly, and the thumbnail is named by its MD5.
        let uri = FileURI.string(forAbsolutePath: "\(fixture.mount.mountPoint)/lists/demo/\(names[1])")
        #expect(uri.hasSuffix("/lists/demo/00002-gr%C3%BCne-Wiese.png"))
        #expect(FileManager.default.fileExists(atPath: "\(xdg)/thumbnails/normal/\(MD5.hex(of: Array(uri.utf8))).png"))

        // A remount keeps every entry's mtime and size (the origin sends no Last-Modified: the first fetch time, kept
        // with the entry), so the thumbnails' Thumb::MTime still match, and stat reads no original.
        func facts(_ mount: MountedImgfs) -> [String] {
            names.prefix(3).map { name in
                var status = stat()
                let found = stat("\(mount.mountPoint)/lists/demo/\(name)", &status) == 0
                return found ? "\(name) \(status.st_mtim.tv_sec) \(status.st_size)" : "\(name) missing"
            }
        }
        let first = facts(fixture.mount)
        let thumbnailTimes = names.prefix(3).map { name -> String in
            let path = "\(fixture.mount.mountPoint)/lists/demo/\(name)"
            let file = "\(xdg)/thumbnails/large/\(MD5.hex(of: Array(FileURI.string(forAbsolutePath: path).utf8))).png"
            let text = ThumbnailPNGText.read(file)
            return "\(name) \(text["Thumb::MTime"] ?? "?") \(text["Thumb::Size"] ?? "?")"
        }
        #expect(first == thumbnailTimes, "Thumb::MTime and Thumb::Size are the entries' stat values")
        Thread.sleep(forTimeInterval: 1.1)
        fixture.mount.stop()
        let remounted = try MountedImgfs(cacheDirectory: cache)
        defer { remounted.stop() }
        let requests = fixture.origin.totalRequests
        #expect(facts(remounted) == first, "the same mtimes and sizes after a remount")
        #expect(fixture.origin.totalRequests == requests, "stat after the remount read no original")
    }

    @Test("--tune desktop-thumbnails=on: a list entry opened gets its thumbnails in the user's cache, valid for gio")
    func feedAsOpened() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gio") else {
            throw Fixtures.Missing(description: "need gio: apt-get install libglib2.0-bin (mount-scripts/install-deps)")
        }
        let xdg = "/tmp/imgfs-test-\(getpid())-xdg-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: xdg) }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = xdg
        let fixture = try ListFixture(mountArguments: ["--tune", "desktop-thumbnails=on"], environment: environment)
        defer { fixture.stop() }
        let names = try demoList(fixture)
        let directory = "\(fixture.mount.mountPoint)/lists/demo"
        func thumbnail(_ name: String, _ size: String) -> String {
            let uri = FileURI.string(forAbsolutePath: "\(directory)/\(name)")
            return "\(xdg)/thumbnails/\(size)/\(MD5.hex(of: Array(uri.utf8))).png"
        }
        #expect(FileManager.default.contents(atPath: "\(directory)/\(names[2])") != nil)
        let written = Poll.until(timeout: 20) {
            FileManager.default.fileExists(atPath: thumbnail(names[2], "normal"))
                && FileManager.default.fileExists(atPath: thumbnail(names[2], "large"))
        }
        #expect(written, "the opened entry's thumbnails were written")
        #expect(!FileManager.default.fileExists(atPath: thumbnail(names[0], "normal")), "not for entries not opened")
        let info = try ChildProcess.run(
            "/usr/bin/env",
            ["XDG_CACHE_HOME=\(xdg)", "/usr/bin/gio", "info", "-a", "thumbnail::is-valid", "\(directory)/\(names[2])"])
        #expect(info.output.contains("thumbnail::is-valid: TRUE"), "\(info.output)")
    }

    @Test("thumb/<px>/lists/NAME/<entry>: the entry's thumbnail by its readable name; ls makes no request")
    func readableNames() throws {
        try requirePython()
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let names = try demoList(fixture)
        #expect(try fixture.ls("thumb/256").isEmpty, "thumb/256/ lists cached variants only")
        #expect(try fixture.ls("thumb/256/lists") == ["demo"])
        #expect(try fixture.ls("thumb/256/lists/demo") == names)
        #expect(fixture.origin.totalRequests == 0, "listing thumb/256/lists/demo touches no network")
        let readable = "\(fixture.mount.mountPoint)/thumb/256/lists/demo/00003-wall.jpg"
        let plain = "\(fixture.mount.mountPoint)/thumb/256/\(NameCodec.encode(fixture.origin.baseURL + "/w/wall.jpg"))"
        let bytes = FileManager.default.contents(atPath: readable)
        #expect(bytes != nil && bytes == FileManager.default.contents(atPath: plain), "the same thumbnail")
        let python = try ChildProcess.run(
            "/usr/bin/python3",
            ["-c", "import sys; from PIL import Image; print(max(Image.open(sys.argv[1]).size))", readable])
        #expect(python.output == "256\n", "\(python.output)")
        let gone = "\(fixture.mount.mountPoint)/thumb/256/lists/demo/00005-gone.png"
        #expect(FileManager.default.contents(atPath: gone) == nil, "the thumbnail of a failed entry cannot be read")
        #expect(fixture.origin.requestCount("/w/wall.jpg") == 1)
    }

    @Test("an entry refetched with the same content keeps its mtime (no Last-Modified: its first fetch time)")
    func mtimeKeptAcrossRefetch() throws {
        try withMountedOrigin(["--expire", "1s"]) { origin, mount in
            let icon = try Fixtures.smallPNGs(2)
            origin.route("/same.png", .ok(icon[0], contentType: "image/png"))
            let path = mount.path(origin.baseURL + "/same.png")
            func mtime() -> Int? {
                var status = stat()
                return stat(path, &status) == 0 ? status.st_mtim.tv_sec : nil
            }
            let first = mtime()
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == icon[0])
            Thread.sleep(forTimeInterval: 2.2)
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == icon[0])
            #expect(origin.requestCount("/same.png") == 2, "fetched again once expired")
            #expect(mtime() == first, "the same content: the same mtime")
            origin.route("/same.png", .ok(icon[1], contentType: "image/png"))
            Thread.sleep(forTimeInterval: 1.2)
            #expect(FileManager.default.contents(atPath: path).map(Array.init) == icon[1])
            #expect(mtime() != first, "new content: a new mtime")
        }
    }
}

/// The tEXt chunks of a PNG file, read by the test itself.
enum ThumbnailPNGText {
    static func read(_ path: String) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        let bytes = Array(data)
        var text: [String: String] = [:]
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= bytes.count - offset - 12 else { break }
            if String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self) == "tEXt" {
                let chunk = bytes[offset + 8..<offset + 8 + length]
                if let nul = chunk.firstIndex(of: 0) {
                    text[String(decoding: chunk[..<nul], as: UTF8.self)] = String(
                        decoding: chunk[(nul + 1)...], as: UTF8.self)
                }
            }
            offset += 12 + length
        }
        return text
    }
}
