import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 38, item 4: the format views under a list's and a host's readable names (`fmt/jpeg/lists/NAME/<entry>`,
/// `fmt/png/hosts/HOST/<name>`), each name with the view's extension, through a real mount and real libvips.
@Suite("Format views by readable names", .serialized, .enabled(if: FuseAvailability.available))
struct FormatViewListTests {
    /// A 600 x 400 image, the left half red and the right half blue, as PNG, AVIF and JPEG.
    private func images() throws -> ThumbnailImages {
        let images = try ThumbnailImages()
        let made = try ChildProcess.run(
            "/usr/bin/python3", ["-c", PillowProbe.halves, "\(images.directory)/halves.png"])
        guard made.status == 0 else { throw ThumbnailImages.Failed(description: "need Pillow: \(made.output)") }
        try images.sh(
            "vips copy halves.png 'halves.avif[compression=av1]' && convert halves.png -quality 90 halves.jpg")
        return images
    }

    /// What Pillow sees of the image at `path`, at a point of each half (``PillowProbe/inspect``).
    private func inspect(_ path: String) throws -> String {
        try PillowProbe.run(PillowProbe.inspect, [path, "100,200", "500,200"])
    }

    private func mimeType(_ path: String) throws -> String {
        try ChildProcess.run("/usr/bin/file", ["--brief", "--mime-type", path]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether `seen` (``inspect``) is a 600 x 400 `format` image, red on the left and blue on the right, and for a
    /// JPEG a baseline one.
    private func isHalves(_ seen: String, _ format: String) -> Bool {
        let parts = seen.split(separator: " ").map(String.init)
        guard parts.count == 6, parts[0] == format, parts[1] == "600", parts[2] == "400" else { return false }
        guard parts[3] == (format == "JPEG" ? "baseline" : "none") else { return false }
        let left = parts[4].split(separator: ",").compactMap { Int($0) }
        let right = parts[5].split(separator: ",").compactMap { Int($0) }
        return left.count == 3 && right.count == 3 && left[0] > 180 && left[2] < 90 && right[2] > 180 && right[0] < 90
    }

    @Test("fmt/jpeg/lists/NAME/: every entry by its name with .jpg, a baseline JPEG; ls makes no request; one GET")
    func listNames() throws {
        let images = try images()
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let origin = fixture.origin
        origin.route("/f/green-photo.avif", .ok(try images.bytes("halves.avif"), contentType: "image/avif"))
        origin.route("/f/plain.png", .ok(try images.bytes("halves.png"), contentType: "image/png"))
        origin.route("/f/photo.jpg", .ok(try images.bytes("halves.jpg"), contentType: "image/jpeg"))
        let urls = ["/f/green-photo.avif", "/f/plain.png", "/f/photo.jpg"].map { origin.baseURL + $0 }
        #expect(try fixture.add("demo", urls.joined(separator: "\n") + "\n", extra: ["--no-probe"]).status == 0)
        let entries = ["00001-green-photo.avif", "00002-plain.png", "00003-photo.jpg"]
        #expect(try fixture.ls("lists/demo") == entries)

        let jpegNames = ["00001-green-photo.jpg", "00002-plain.jpg", "00003-photo.jpg"]
        let pngNames = ["00001-green-photo.png", "00002-plain.png", "00003-photo.png"]
        #expect(try fixture.ls("fmt/jpeg/lists") == ["demo"])
        #expect(try fixture.ls("fmt/jpeg/lists/demo") == jpegNames)
        #expect(try fixture.ls("fmt/png/lists/demo") == pngNames)
        #expect(origin.totalRequests == 0, "listing the format views' readable names touches no network")

        let root = fixture.mount.mountPoint
        for name in jpegNames {
            let path = "\(root)/fmt/jpeg/lists/demo/\(name)"
            let seen = try inspect(path)
            #expect(isHalves(seen, "JPEG"), "\(name): \(seen)")
            #expect(try mimeType(path) == "image/jpeg", "\(name)")
        }
        for name in pngNames {
            let path = "\(root)/fmt/png/lists/demo/\(name)"
            let seen = try inspect(path)
            #expect(isHalves(seen, "PNG"), "\(name): \(seen)")
            #expect(try mimeType(path) == "image/png", "\(name)")
        }
        // The same file as under the img/ name, whose extension (of its fragment) says the same type.
        let byURL = "\(root)/fmt/jpeg/\(NameCodec.encode(urls[0] + "#.jpg"))"
        #expect(
            FileManager.default.contents(atPath: byURL) != nil
                && FileManager.default.contents(atPath: byURL)
                    == FileManager.default.contents(atPath: "\(root)/fmt/jpeg/lists/demo/\(jpegNames[0])")
        )
        // A host's names (its cached images): the AVIF's reads as a JPEG too; ls makes no request.
        let host = "127.0.0.1:\(origin.port)"
        let requests = origin.totalRequests
        #expect(try fixture.ls("fmt/jpeg/hosts").contains(host))
        let hostNames = try fixture.ls("fmt/jpeg/hosts/\(host)")
        let hostEntries = try fixture.ls("hosts/\(host)")
        #expect(hostNames.count == hostEntries.count && hostNames.count >= 3, "\(hostNames) \(hostEntries)")
        #expect(hostNames.allSatisfy { $0.hasSuffix(".jpg") }, "\(hostNames)")
        #expect(origin.totalRequests == requests, "listing a host's format view touches no network")
        let hostAVIF = try #require(hostNames.first { $0.hasPrefix("green-photo") })
        let hostSeen = try inspect("\(root)/fmt/jpeg/hosts/\(host)/\(hostAVIF)")
        #expect(isHalves(hostSeen, "JPEG"), "\(hostAVIF): \(hostSeen)")
        // A name whose extension is not the view's type does not exist: the entry's own name included.
        for name in ["00001-green-photo.avif", "00002-plain.png", "00001-green-photo", "00004-none.jpg"] {
            #expect(
                PosixFile.read("\(root)/fmt/jpeg/lists/demo/\(name)").map(\.count) == .failure(Errno(ENOENT)), "\(name)"
            )
        }
        #expect(
            PosixFile.read("\(root)/fmt/png/lists/demo/00003-photo.jpg").map(\.count) == .failure(Errno(ENOENT)))
        // One GET of each original for both views, their img/ names, the host's names and a thumbnail.
        #expect((try? PosixFile.read("\(root)/thumb/256/lists/demo/\(entries[1])").get().count) ?? 0 > 0)
        for path in ["/f/green-photo.avif", "/f/plain.png", "/f/photo.jpg"] {
            #expect(origin.requestCount(path) == 1, "\(path)")
        }
        // rm evicts the view, the entry stays.
        #expect(unlink("\(root)/fmt/jpeg/lists/demo/\(jpegNames[1])") == 0)
        #expect(try fixture.ls("fmt/jpeg/lists/demo") == jpegNames)
        #expect(try fixture.ls("lists/demo") == entries)
    }
}
