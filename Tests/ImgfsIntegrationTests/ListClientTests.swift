import Foundation
import Glibc
import ImgfsCore
import ImgfsTestSupport
import Testing

/// Issue 16: the programs people browse folders with, pointed at a list directory through the real mount.
@Suite("List clients", .serialized, .enabled(if: FuseAvailability.available))
struct ListClientTests {
    private func sh(_ command: String, timeout: Double = 120) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: timeout)
    }

    /// A fixture whose list `shots` holds six images (JPEG and PNG, one without an extension in its URL).
    private func withList(_ body: (ListFixture, String, [String]) throws -> Void) throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let jpeg = try Fixtures.mediumJPEG()
        fixture.origin.route("/photos/green-photo.jpg", .ok(jpeg, contentType: "image/jpeg"))
        fixture.origin.route("/raw/blob", .ok(fixture.icons[5], contentType: "image/png"))
        let urls =
            ["\(fixture.origin.baseURL)/photos/green-photo.jpg", "\(fixture.origin.baseURL)/raw/blob"]
            + (1...4).map(fixture.url)
        #expect(try fixture.add("shots", urls.joined(separator: "\n")).status == 0)
        let directory = "\(fixture.mount.mountPoint)/lists/shots"
        let names = try fixture.ls("lists/shots")
        #expect(
            names == [
                "00001-green-photo.jpg", "00002-blob.png", "00003-1.png", "00004-2.png", "00005-3.png",
                "00006-4.png"
            ])
        try body(fixture, directory, names)
    }

    @Test("feh -m and feh -t on a list folder: images, not blanks, labelled with the readable names")
    func feh() throws {
        try withList { fixture, directory, names in
            let montage = "\(fixture.mount.root)/montage.png"
            let made = try sh("feh -m -O '\(montage)' '\(directory)' && identify -format '%k' '\(montage)'")
            #expect(made.status == 0, "\(made.output)")
            #expect((Int(made.output.split(separator: "\n").last ?? "") ?? 0) > 200, "montage colours: \(made.output)")
            let thumbnails = "\(fixture.mount.root)/thumbnails.png"
            let index = try sh("feh -t -O '\(thumbnails)' '\(directory)' && identify -format '%k %w' '\(thumbnails)'")
            #expect(index.status == 0, "\(index.output)")
            #expect(
                (Int(index.output.split(separator: "\n").last?.split(separator: " ").first ?? "") ?? 0) > 1000,
                "thumbnail sheet colours: \(index.output)")
            // The labels feh draws are the file names it read: its list mode prints them.
            let listed = try sh("feh -l '\(directory)'")
            for name in names { #expect(listed.output.contains(name), "\(name) in \(listed.output)") }
        }
    }

    @Test("sxiv in thumbnail mode under Xvfb shows the list; gio info names the entry's type and size")
    func thumbnailViewerAndGio() throws {
        try withList { fixture, directory, names in
            let info = try sh("gio info '\(directory)/\(names[0])'")
            #expect(info.status == 0, "\(info.output)")
            #expect(info.output.contains("display name: \(names[0])"), "\(info.output)")
            #expect(info.output.contains("standard::content-type: image/jpeg"), "\(info.output)")
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sxiv") else {
                Issue.record("sxiv is not installed (mount-scripts/install-deps --test installs it)")
                return
            }
            let display = try VirtualDisplay(number: 100 + Int(getpid() % 9), size: "800x600")
            defer { display.stop() }
            var environment = ProcessInfo.processInfo.environment
            environment["DISPLAY"] = display.name
            let viewerLog = "\(fixture.mount.root)/sxiv.log"
            let viewer = try ChildProcess.spawn(
                "/usr/bin/sxiv", ["-t", "-g", "800x600"] + names.map { "\(directory)/\($0)" },
                environment: environment, outputPath: viewerLog)
            defer { viewer.kill9AndReap() }
            let colours = display.waitForPicture(shot: "\(fixture.mount.root)/sxiv.png")
            #expect(colours > 1000, "sxiv's thumbnails: \(colours) colours")
            #expect(viewer.isRunning, "\((try? String(contentsOfFile: viewerLog, encoding: .utf8)) ?? "")")
        }
    }

    @Test("headless Chromium decodes every <img> pointing at list entries by file:// path")
    func chromium() throws {
        try withList { fixture, directory, names in
            let page = "\(fixture.mount.root)/page.html"
            let images = names.map { "<img src=\"file://\(directory)/\($0)\">" }.joined()
            let script = """
                <script>window.onload = () => { const all = [...document.images];
                const decoded = all.filter(i => i.complete && i.naturalWidth > 0).length;
                document.title = 'decoded ' + decoded + ' of ' + all.length; };
                </script>
                """
            try "<!DOCTYPE html><html><head>\(script)</head><body>\(images)</body></html>"
                .write(toFile: page, atomically: true, encoding: .utf8)
            let run = try sh(
                "chromium --headless --no-sandbox --disable-gpu --allow-file-access-from-files "
                    + "--virtual-time-budget=10000 --dump-dom 'file://\(page)' 2>/dev/null", timeout: 120)
            #expect(
                run.output.contains("<title>decoded \(names.count) of \(names.count)</title>"),
                "\(run.output.prefix(400))")
        }
    }

    @Test("os.scandir + Pillow load every entry; ls -l and cp -r copy the folder byte for byte")
    func pythonAndCoreutils() throws {
        try withList { fixture, directory, names in
            let script = """
                import os, sys
                from PIL import Image
                entries = sorted(e.name for e in os.scandir(sys.argv[1]))
                for name in entries:
                    with Image.open(os.path.join(sys.argv[1], name)) as image:
                        image.load()
                        print(name, image.format, image.size[0])
                """
            let run = try ChildProcess.run("/usr/bin/python3", ["-c", script, directory])
            #expect(run.status == 0, "\(run.output)")
            #expect(run.output.split(separator: "\n").map { String($0.split(separator: " ")[0]) } == names)
            #expect(run.output.contains("00001-green-photo.jpg JPEG"))
            let long = try sh("ls -l '\(directory)'")
            #expect(long.output.split(separator: "\n").filter { $0.hasPrefix("-r--r--r--") }.count == names.count)
            let copy = "\(fixture.mount.root)/copy"
            #expect(try sh("cp -r '\(directory)' '\(copy)' && diff -r '\(directory)' '\(copy)'").status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: copy).sorted() == names)
        }
    }
}
