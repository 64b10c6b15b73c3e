import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 37: what a list knows of its entries, through the real mount: the header attributes, `.index.jsonl` read by
/// Python and jq, `imgfs list show`, and `stat` after a remount answered from the list with the origin stopped.
@Suite("List facts through the mount", .serialized, .enabled(if: FuseAvailability.available))
struct ListFactsMountTests {
    /// A JPEG that starts like a camera's: EXIF orientation 6 (big-endian), then a 640 × 480 frame header, a scan.
    static let photo: [UInt8] = {
        func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        }
        let tiff: [UInt8] =
            Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]
        return [0xFF, 0xD8] + segment(0xE1, Array("Exif".utf8) + [0, 0] + tiff)
            + segment(0xC0, [8, 0x01, 0xE0, 0x02, 0x80, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
            + [UInt8](repeating: 0x55, count: 5000) + [0xFF, 0xD9]
    }()

    @Test("ls -l teaches the list its entries: xattrs, .index.jsonl, list show; after a remount stat needs no origin")
    func factsAcrossRemount() throws {
        let cache = "/tmp/imgfs-facts-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let fixture = try ListFixture(cacheDirectory: cache)
        var stopped = false
        defer { if !stopped { fixture.stop() } }
        let origin = fixture.origin
        origin.route("/p/photo.jpg", .ok(Self.photo, contentType: "image/jpeg"))
        origin.route("/p/broken.png", .status(500))
        let icon = fixture.icons[2]
        let iconWidth = Int(icon[16]) << 24 | Int(icon[17]) << 16 | Int(icon[18]) << 8 | Int(icon[19])
        let iconHeight = Int(icon[20]) << 24 | Int(icon[21]) << 16 | Int(icon[22]) << 8 | Int(icon[23])
        let text = "\(origin.baseURL)/p/photo.jpg\n\(fixture.url(2))\n\(origin.baseURL)/p/broken.png\n"
        #expect(try fixture.add("shots", text).status == 0)
        let directory = "\(fixture.mount.mountPoint)/lists/shots"
        let names = ["00001-photo.jpg", "00002-2.png", "00003-broken.png"]
        #expect(try fixture.ls("lists/shots") == names)
        _ = try ChildProcess.run("/bin/ls", ["-l", directory])
        let index = "\(directory)/.index.jsonl"
        func lines() -> [[String: Any]] {
            let text = (try? String(contentsOfFile: index, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        // Facts are written off the FUSE threads once each transfer has ended.
        Poll.until(timeout: 10) {
            let now = lines()
            return now.count == 3 && now[0]["width"] as? Int == 640 && now[1]["format"] as? String == "png"
                && now[2]["status"] as? String == "failed"
        }
        let known = lines()
        #expect(known.count == 3)
        #expect(known.map { $0["name"] as? String } == names)
        #expect(known.first?["url"] as? String == "\(origin.baseURL)/p/photo.jpg")
        #expect(known.first?["size"] as? Int == Self.photo.count && known.first?["height"] as? Int == 480)
        #expect(known.first?["orientation"] as? Int == 6 && known.first?["format"] as? String == "jpeg")
        #expect(known.count > 1 && known[1]["width"] as? Int == iconWidth && known[1]["height"] as? Int == iconHeight)
        #expect(known.count > 2 && known[2]["status"] as? String == "failed" && known[2]["size"] is NSNull)
        #expect(try fixture.ls("lists/shots") == names, "the index is not listed among the images")

        // Python's json module and jq read the file as it is.
        let python = try ChildProcess.run(
            "/usr/bin/python3",
            ["-c", "import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; print(rows[0]['width'])", index])
        #expect(python.output == "640\n", "\(python.output)")
        let jq = try ChildProcess.run("/usr/bin/jq", ["-r", "select(.status == \"ok\") | .name", index])
        #expect(jq.output == "00001-photo.jpg\n00002-2.png\n", "\(jq.output)")

        // The attributes of the entry.
        func attribute(_ name: String, _ path: String) throws -> String {
            try ChildProcess.run(
                "/usr/bin/getfattr", ["--absolute-names", "-n", "user.imgfs.\(name)", "--only-values", path]
            )
            .output
        }
        let photo = "\(directory)/00001-photo.jpg"
        #expect(try attribute("width", photo) == "640" && attribute("height", photo) == "480")
        #expect(try attribute("orientation", photo) == "6" && attribute("format", photo) == "jpeg")
        #expect(try attribute("size", photo) == "\(Self.photo.count)")

        // imgfs list show: the same lines with --json, a table otherwise.
        let show = try ChildProcess.run(
            MountedImgfs.binary, ["list", "show", fixture.mount.mountPoint, "shots", "--json"])
        let indexText = try String(contentsOfFile: index, encoding: .utf8)
        #expect(show.status == 0 && show.output == indexText)
        let table = try ChildProcess.run(
            MountedImgfs.binary, ["list", "show", "--mount", fixture.mount.mountPoint, "shots"])
        #expect(table.output.contains("00001-photo.jpg\t\(Self.photo.count)\tjpeg\t640\t480\t6\tok"), "\(table.output)")
        #expect(table.output.contains("00003-broken.png\t-\t-\t-\t-\t-\tfailed: HTTP 500"), "\(table.output)")

        // Replaced with the photo moved to the end: it keeps its name and what the list learnt of it.
        let reordered = "\(fixture.url(2))\n\(origin.baseURL)/p/broken.png\n\(origin.baseURL)/p/photo.jpg\n"
        #expect(try fixture.add("shots", reordered, extra: ["--no-probe"]).status == 0)
        let moved = lines()
        #expect(moved.count == 3 && moved[2]["name"] as? String == "00001-photo.jpg", "\(moved)")
        #expect(moved.count == 3 && moved[2]["width"] as? Int == 640 && moved[0]["width"] as? Int == iconWidth)

        // Remount on the same cache with the images gone from it and the origin stopped: stat answers from the list.
        fixture.stop()
        stopped = true
        for item in (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? [] where item != "lists" {
            try FileManager.default.removeItem(atPath: "\(cache)/\(item)")
        }
        let again = try MountedImgfs(cacheDirectory: cache)
        defer { again.stop() }
        let remounted = "\(again.mountPoint)/lists/shots"
        #expect(PosixFile.size("\(remounted)/00001-photo.jpg") == .success(Self.photo.count))
        #expect(PosixFile.size("\(remounted)/00002-2.png") == .success(icon.count))
        #expect(PosixFile.size("\(remounted)/00003-broken.png") == .failure(Errno(ENOENT)), "a failure is tried again")
        #expect(try attribute("width", "\(remounted)/00001-photo.jpg") == "640")
        let listed = try ChildProcess.run("/bin/ls", ["-l", remounted])
        #expect(listed.output.contains("\(Self.photo.count)"), "\(listed.output)")
        #expect(PosixFile.read("\(remounted)/00001-photo.jpg") != .success(Self.photo), "no origin: no bytes")
    }
}
