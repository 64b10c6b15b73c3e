import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Testing

/// Issue 38, item 1, as a user sees it: pcmanfm under Xvfb shows a thumbnail for every entry of a list of large
/// wallpapers after `imgfs thumbnails --desktop`, and opens no original to do it.
@Suite("Desktop thumbnails in a file manager", .serialized, .enabled(if: FuseAvailability.available))
struct DesktopFileManagerTests {
    /// The icon grid of pcmanfm's window (640 × 480 at the top left, below the toolbar, right of the side pane).
    static let grid = "470x380+160+70"

    /// The `count` largest JPEGs in /usr/share/backgrounds, largest first; nil when there are fewer.
    static func largestWallpapers(_ count: Int) throws -> [[UInt8]]? {
        let directory = "/usr/share/backgrounds"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".jpg") }
        let sized = names.map { name -> (String, Int) in
            let size = (try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")[.size] as? Int) ?? 0
            return ("\(directory)/\(name)", size ?? 0)
        }.sorted { $0.1 > $1.1 }.prefix(count)
        guard sized.count == count else { return nil }
        return try sized.map { Array(try Data(contentsOf: URL(fileURLWithPath: $0.0))) }
    }

    @Test("pcmanfm shows the thumbnails vipsthumbnail makes of every wallpaper; a permuted control differs")
    func pcmanfmShowsThumbnails() throws {
        for tool in ["/usr/bin/pcmanfm", "/usr/bin/Xvfb", "/usr/bin/vipsthumbnail", "/usr/bin/compare"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                throw Fixtures.Missing(
                    description: "need \(tool): apt-get install pcmanfm xvfb libvips-tools imagemagick"
                        + " (mount-scripts/install-deps --test)")
            }
        }
        // The ten largest wallpapers (lomiri-wallpapers: 0.9 to 6.7 MB; pcmanfm makes no thumbnail of its own of a
        // file over 2 MiB).
        let all = try Fixtures.wallpapers(maximumSize: 64 << 20, count: 10)
        let wallpapers = try Self.largestWallpapers(10) ?? all
        let scratch = "/tmp/imgfs-test-\(getpid())-pcmanfm-\(UUID().uuidString.prefix(6))"
        defer {
            if ProcessInfo.processInfo.environment["IMGFS_KEEP_SCREENSHOTS"] == nil {
                try? FileManager.default.removeItem(atPath: scratch)
            }
        }
        let fixture = try ListFixture()
        defer { fixture.stop() }
        var lines: [String] = []
        for (index, bytes) in wallpapers.enumerated() {
            fixture.origin.route("/wall/\(index).jpg", .ok(bytes, contentType: "image/jpeg"))
            lines.append("\(fixture.origin.baseURL)/wall/\(index).jpg\twallpaper \(index)")
        }
        #expect(try fixture.add("walls", lines.joined(separator: "\n") + "\n", extra: ["--no-probe"]).status == 0)
        let names = try fixture.ls("lists/walls")
        #expect(names.count == wallpapers.count)

        let imgfsCache = "\(scratch)/imgfs-xdg"
        let run = try ChildProcess.run(
            "/usr/bin/env",
            ["XDG_CACHE_HOME=\(imgfsCache)", MountedImgfs.binary, "thumbnails", "--desktop", fixture.mount.mountPoint],
            timeout: 300)
        #expect(run.status == 0 && run.output.contains("10 thumbnailed"), "\(run.output)")

        // The same files on a local disk, with thumbnails made by vipsthumbnail in a cache of their own, and in a
        // control cache where each file has its neighbour's thumbnail.
        let local = "\(scratch)/local/walls"
        try FileManager.default.createDirectory(atPath: local, withIntermediateDirectories: true)
        let reference = DesktopThumbnailCache(directory: URL(fileURLWithPath: "\(scratch)/vips-xdg/thumbnails"))
        let control = DesktopThumbnailCache(directory: URL(fileURLWithPath: "\(scratch)/control-xdg/thumbnails"))
        var made: [String: [DesktopThumbnailSize: [UInt8]]] = [:]
        for (index, name) in names.enumerated() {
            let path = "\(local)/\(name)"
            try Data(wallpapers[index]).write(to: URL(fileURLWithPath: path))
            for size in [DesktopThumbnailSize.normal, .large] {
                let out = "\(scratch)/vips-\(index)-\(size.pixels).png"
                let vips = try ChildProcess.run(
                    "/usr/bin/vipsthumbnail", [path, "--size", "\(size.pixels)x\(size.pixels)>", "-o", out])
                #expect(vips.status == 0, "\(vips.output)")
                made[name, default: [:]][size] = Array(try Data(contentsOf: URL(fileURLWithPath: out)))
            }
        }
        for (index, name) in names.enumerated() {
            let path = "\(local)/\(name)"
            var status = stat()
            #expect(stat(path, &status) == 0)
            let uri = FileURI.string(forAbsolutePath: path)
            let neighbour = names[(index + 1) % names.count]
            for size in [DesktopThumbnailSize.normal, .large] {
                try reference.write(
                    png: made[name]![size]!, uri: uri, size: size, modified: status.st_mtim.tv_sec,
                    fileSize: Int(status.st_size))
                try control.write(
                    png: made[neighbour]![size]!, uri: uri, size: size, modified: status.st_mtim.tv_sec,
                    fileSize: Int(status.st_size))
            }
        }

        func shot(_ folder: String, cache: String, _ label: String) throws -> String {
            let display = try VirtualDisplay()
            defer { display.stop() }
            let path = "\(scratch)/\(label).png"
            let arguments = [
                "XDG_CACHE_HOME=\(cache)", "XDG_CONFIG_HOME=\(scratch)/config-\(label)", "HOME=\(scratch)",
                "/usr/bin/pcmanfm", "--no-desktop", folder
            ]
            let colours = try display.settledScreenshot(
                of: "/usr/bin/env", arguments, to: path, minimumColours: 200, log: "\(scratch)/\(label).log")
            #expect(colours > 200, "pcmanfm drew a window (\(label))")
            let crop = try ChildProcess.run("/usr/bin/convert", [path, "-crop", Self.grid, "+repage", path])
            #expect(crop.status == 0, "\(crop.output)")
            return path
        }
        let requests = fixture.origin.totalRequests
        let opensBefore = fixture.counters("walls")["opens"] ?? 0
        let mounted = try shot("\(fixture.mount.mountPoint)/lists/walls", cache: imgfsCache, "imgfs")
        #expect(fixture.origin.totalRequests == requests, "pcmanfm made the origin send nothing")
        #expect((fixture.counters("walls")["opens"] ?? 0) == opensBefore, "pcmanfm opened no original")
        let expected = try shot(local, cache: "\(scratch)/vips-xdg", "vips")
        let permuted = try shot(local, cache: "\(scratch)/control-xdg", "control")

        func differing(_ a: String, _ b: String) -> Int {
            let run = try? ChildProcess.run("/bin/sh", ["-c", "compare -metric AE -fuzz 12% '\(a)' '\(b)' null: 2>&1"])
            return run.flatMap { Int(Double($0.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1) } ?? -1
        }
        let same = differing(mounted, expected)
        let different = differing(expected, permuted)
        print("pcmanfm's icon grid: \(same) pixels differ from vipsthumbnail's thumbnails; the control: \(different)")
        #expect(same >= 0 && same < 300, "imgfs's thumbnails look like vipsthumbnail's: \(same) pixels differ")
        #expect(different > 3000, "the control differs where the thumbnails are: \(different) pixels")
    }
}
