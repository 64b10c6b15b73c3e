import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 16: the programs people browse folders with, pointed at a list directory through the real mount.
@Suite("List clients", .serialized, .enabled(if: FuseAvailability.available))
struct ListClientTests {
    private func sh(_ command: String, timeout: Double = 120) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: timeout)
    }

    /// The list `shots` of the fixture: its folder, its entries' names, URLs and image bytes, in list order.
    private struct Shots {
        let directory: String
        let names: [String]
        let urls: [String]
        let images: [[UInt8]]
    }

    /// A fixture whose list `shots` holds six images (JPEG and PNG, one without an extension in its URL).
    private func withList(_ body: (ListFixture, Shots) throws -> Void) throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let jpeg = try Fixtures.mediumJPEG()
        fixture.origin.route("/photos/green-photo.jpg", .ok(jpeg, contentType: "image/jpeg"))
        fixture.origin.route("/raw/blob", .ok(fixture.icons[5], contentType: "image/png"))
        let urls =
            ["\(fixture.origin.baseURL)/photos/green-photo.jpg", "\(fixture.origin.baseURL)/raw/blob"]
            + (1...4).map(fixture.url)
        #expect(try fixture.add("shots", urls.joined(separator: "\n")).status == 0)
        let names = try fixture.ls("lists/shots")
        #expect(
            names == [
                "00001-green-photo.jpg", "00002-blob.png", "00003-1.png", "00004-2.png", "00005-3.png",
                "00006-4.png"
            ])
        let images = [jpeg, fixture.icons[5]] + (1...4).map { fixture.icons[$0] }
        try body(
            fixture,
            Shots(directory: "\(fixture.mount.mountPoint)/lists/shots", names: names, urls: urls, images: images))
    }

    /// Writes `images` under `names` into a new folder `directory`.
    private func write(_ images: [[UInt8]], names: [String], to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, image) in zip(names, images) {
            #expect(FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(image)))
        }
    }

    @Test("feh -m and feh -t on a list folder under Xvfb: the screenshots show the images and the readable names")
    func feh() throws {
        try withList { fixture, list in
            let display = try VirtualDisplay()
            defer { display.stop() }
            // The origin's images under the same names on a tmpfs, and under the encoded URLs of img/: what feh shows
            // of the list must be exactly what it shows of the first (the same pixels, labels included), and differ
            // from the second (so the comparison can fail: the labels are the only difference).
            let copies = "/dev/shm/imgfs-feh-\(getpid())-\(UUID().uuidString.prefix(6))"
            defer { try? FileManager.default.removeItem(atPath: copies) }
            try write(list.images, names: list.names, to: "\(copies)/readable")
            let encoded = list.urls.map { URL(fileURLWithPath: fixture.mount.path($0)).lastPathComponent }
            try write(list.images, names: encoded, to: "\(copies)/encoded")
            let log = "\(fixture.mount.root)/feh.log"
            func shot(_ mode: String, _ directory: String, _ label: String) throws -> String {
                let path = "\(fixture.mount.root)/\(label).png"
                let colours = try display.settledScreenshot(
                    of: "/usr/bin/feh", [mode, "-S", "filename", "-W", "800", directory], to: path,
                    minimumColours: 200, log: log)
                // Not blank: the black screen has one colour, feh's text two more; the images bring hundreds.
                let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                #expect(colours > 200, "\(label): \(colours) colours; feh said: \(said)")
                return path
            }
            let montage = try shot("-m", list.directory, "montage-list")
            let montageCopy = try shot("-m", "\(copies)/readable", "montage-tmpfs")
            #expect(VirtualDisplay.differingPixels(montage, montageCopy) == 0, "the montage shows the same images")
            let sheet = try shot("-t", list.directory, "thumbnails-list")
            let sheetCopy = try shot("-t", "\(copies)/readable", "thumbnails-tmpfs")
            let sheetEncoded = try shot("-t", "\(copies)/encoded", "thumbnails-encoded")
            #expect(
                VirtualDisplay.differingPixels(sheet, sheetCopy) == 0,
                "the thumbnail sheet shows the same images and the same labels as the tmpfs copy")
            let otherLabels = VirtualDisplay.differingPixels(sheet, sheetEncoded) ?? 0
            #expect(otherLabels > 100, "labels with the encoded URLs look different: \(otherLabels) pixels differ")
        }
    }

    @Test("sxiv in thumbnail mode under Xvfb shows the list; gio info names the entry's type and size")
    func thumbnailViewerAndGio() throws {
        try withList { fixture, list in
            let names = list.names, directory = list.directory
            let info = try sh("gio info '\(directory)/\(names[0])'")
            #expect(info.status == 0, "\(info.output)")
            #expect(info.output.contains("display name: \(names[0])"), "\(info.output)")
            #expect(info.output.contains("standard::content-type: image/jpeg"), "\(info.output)")
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/sxiv") else {
                Issue.record("sxiv is not installed (mount-scripts/install-deps --test installs it)")
                return
            }
            let display = try VirtualDisplay()
            defer { display.stop() }
            let viewerLog = "\(fixture.mount.root)/sxiv.log"
            let colours = try display.settledScreenshot(
                of: "/usr/bin/sxiv", ["-t", "-g", "800x600"] + names.map { "\(directory)/\($0)" },
                to: "\(fixture.mount.root)/sxiv.png", minimumColours: 1000, log: viewerLog)
            let said = (try? String(contentsOfFile: viewerLog, encoding: .utf8)) ?? ""
            #expect(colours > 1000, "sxiv's thumbnails: \(colours) colours; sxiv said: \(said)")
        }
    }

    @Test("headless Chromium decodes every <img> pointing at list entries by file:// path")
    func chromium() throws {
        try withList { fixture, list in
            let (directory, names) = (list.directory, list.names)
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
        try withList { fixture, list in
            let (directory, names) = (list.directory, list.names)
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
