import Foundation
import Glibc
import ImgfsTestSupport
import Synchronization
import Testing

/// Issue 37, item 1, through a real mount: a stat of an uncached image costs a probe of its first bytes, an open
/// afterwards fetches only the rest, and an image that changed in between is read whole in its new version.
@Suite("Header probes instead of downloads", .serialized, .enabled(if: FuseAvailability.available))
struct ProbeIntegrationTests {
    /// The probe size (``ImageRepository/probeBytes``).
    private static let probe = 64 << 10

    /// Images at `/p/<name>.jpg` that answer `Range` (`bytes=A-B` and `bytes=N-`, with `If-Range` against their
    /// ETag) as an origin with byte ranges does; ``change(_:)`` gives one a new version with a new ETag.
    final class RangedImages: Sendable {
        private let versions: Mutex<[String: (body: [UInt8], tag: Int)]>

        init(_ bodies: [String: [UInt8]]) {
            versions = Mutex(bodies.mapValues { ($0, 1) })
        }

        func change(_ name: String, to body: [UInt8]) {
            versions.withLock { $0[name] = (body, ($0[name]?.tag ?? 0) + 1) }
        }

        func route(on origin: TestOrigin) {
            origin.route(prefix: "/p/") { [self] request in
                let name = String(request.path.dropFirst(3))
                guard let (body, tag) = versions.withLock({ $0[name] }) else { return OriginResponse(status: 404) }
                let etag = "\"v\(tag)\""
                let headers = [("ETag", etag), ("Content-Type", "image/jpeg")]
                let sameVersion = request.header("If-Range").map { $0 == etag } ?? true
                guard sameVersion, let range = Self.range(request.header("Range"), size: body.count) else {
                    var whole = OriginResponse.ok(body, contentType: "image/jpeg")
                    whole.headers.append(("ETag", etag))
                    return whole
                }
                let content = ("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(body.count)")
                return OriginResponse(status: 206, headers: headers + [content], body: Array(body[range]))
            }
        }

        /// `bytes=A-B` or `bytes=A-` within `size`.
        private static func range(_ header: String?, size: Int) -> ClosedRange<Int>? {
            guard let header, header.hasPrefix("bytes=") else { return nil }
            let bounds = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int(bounds[0]), first < size else { return nil }
            let last = bounds[1].isEmpty ? size - 1 : min(Int(bounds[1]) ?? size - 1, size - 1)
            return first <= last ? first...last : nil
        }
    }

    /// A large JPEG (over 1 MiB).
    private static func largeImage() throws -> [UInt8] {
        let image = try Fixtures.largeJPEG()
        #expect(image.count >= 1 << 20)
        return image
    }

    /// Adds list `name` of the origin's `/p/<file>` URLs (`--no-probe`); returns the entries' paths in list order.
    private static func addList(
        _ name: String, _ files: [String], origin: TestOrigin, mount: MountedImgfs
    ) throws -> [String] {
        let text = files.map { "\(origin.baseURL)/p/\($0)" }.joined(separator: "\n") + "\n"
        let file = "\(mount.root)/\(name).txt"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let added = try ChildProcess.run(
            MountedImgfs.binary, ["list", "add", "--no-probe", mount.mountPoint, name, file])
        #expect(added.status == 0, "\(added.output)")
        let folder = "\(mount.mountPoint)/lists/\(name)"
        return try FileManager.default.contentsOfDirectory(atPath: folder).sorted().map { "\(folder)/\($0)" }
    }

    @Test("ls -l and stat of every entry of a list of large images transfer at most the probe each; sizes are true")
    func listingProbes() throws {
        let image = try Self.largeImage()
        let names = (0..<6).map { "\($0).jpg" }
        let images = RangedImages(Dictionary(uniqueKeysWithValues: names.map { ($0, image) }))
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let entries = try Self.addList("big", names, origin: origin, mount: mount)
            #expect(entries.count == names.count)
            let listed = try ChildProcess.run("/bin/ls", ["-l", "\(mount.mountPoint)/lists/big"])
            #expect(listed.status == 0, "\(listed.output)")
            for entry in entries { #expect(PosixFile.size(entry) == .success(image.count)) }
            for name in names {
                let sent = origin.bodyBytesSent("/p/\(name)")
                #expect(sent > 0 && sent <= Self.probe, "\(name): \(sent) body bytes for ls -l and stat")
                #expect(origin.requestCount("/p/\(name)") == 1, "one probe per entry")
            }
            let probes = origin.requests().filter { $0.path.hasPrefix("/p/") }.compactMap { $0.header("Range") }
            #expect(Set(probes) == ["bytes=0-\(Self.probe - 1)"])
        }
    }

    @Test("a read after ls -l fetches only the rest: the probed bytes are not sent twice, the image is exact")
    func readAfterListing() throws {
        let image = try Self.largeImage()
        let images = RangedImages(["a.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let entry = try #require(try Self.addList("one", ["a.jpg"], origin: origin, mount: mount).first)
            #expect(PosixFile.size(entry) == .success(image.count))
            #expect(origin.bodyBytesSent("/p/a.jpg") == Self.probe)
            #expect(PosixFile.read(entry) == .success(image))
            #expect(origin.bodyBytesSent("/p/a.jpg") == image.count, "every byte sent once")
            #expect(origin.requestCount("/p/a.jpg") == 2, "the probe and the rest")
            let rest = origin.requests().last { $0.path == "/p/a.jpg" }
            #expect(rest?.header("Range") == "bytes=\(Self.probe)-")
            #expect(rest?.header("If-Range") == "\"v1\"")
        }
    }

    @Test("an image that changed between ls -l and the read is read whole in its new version, never mixed")
    func changedBetweenListingAndRead() throws {
        let image = try Self.largeImage()
        let changed = Array(image.prefix(4)) + Array(image.dropFirst(4).reversed()) + Array(repeating: 7, count: 1000)
        let images = RangedImages(["c.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let entry = try #require(try Self.addList("two", ["c.jpg"], origin: origin, mount: mount).first)
            #expect(PosixFile.size(entry) == .success(image.count))
            images.change("c.jpg", to: changed)
            #expect(PosixFile.read(entry) == .success(changed), "the new version, whole")
            #expect(PosixFile.size(entry) == .success(changed.count))
            #expect(PosixFile.read(entry) == .success(changed))
        }
    }

    @Test("a server that ignores Range: ls -l cuts its answer after the probe, a read then gets the image whole")
    func serverIgnoringRange() throws {
        let image = try Self.largeImage()
        try withMountedOrigin { origin, mount in
            origin.route("/p/plain.jpg", .ok(image, contentType: "image/jpeg"))
            let entry = try #require(try Self.addList("plain", ["plain.jpg"], origin: origin, mount: mount).first)
            #expect(PosixFile.size(entry) == .success(image.count))
            #expect(PosixFile.read(entry) == .success(image))
            #expect(origin.requestCount("/p/plain.jpg") == 2)
        }
    }

    @Test("list add names a URL without an extension from a probe of its first bytes, not a download")
    func listAddProbes() throws {
        let image = try Self.largeImage()
        let images = RangedImages(["raw": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let file = "\(mount.root)/raw.txt"
            try "\(origin.baseURL)/p/raw\n".write(toFile: file, atomically: true, encoding: .utf8)
            let added = try ChildProcess.run(MountedImgfs.binary, ["list", "add", mount.mountPoint, "raw", file])
            #expect(added.status == 0, "\(added.output)")
            let names = try FileManager.default.contentsOfDirectory(atPath: "\(mount.mountPoint)/lists/raw")
            #expect(names == ["00001-raw.jpg"])
            #expect(origin.requestCount("/p/raw") == 1)
            #expect(origin.bodyBytesSent("/p/raw") <= Self.probe, "a probe, not a download")
        }
    }

    @Test("a cold read of img/<url> makes one request; of a list entry, the lookup's probe and the rest")
    func coldRead() throws {
        let image = try Self.largeImage()
        let images = RangedImages(["cold.jpg": image, "entry.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            #expect(PosixFile.read(mount.path("\(origin.baseURL)/p/cold.jpg")) == .success(image))
            #expect(origin.requestCount("/p/cold.jpg") == 1, "one GET")
            #expect(origin.bodyBytesSent("/p/cold.jpg") == image.count)
            let entry = try #require(try Self.addList("cold", ["entry.jpg"], origin: origin, mount: mount).first)
            #expect(PosixFile.read(entry) == .success(image))
            #expect(origin.requestCount("/p/entry.jpg") == 2, "the lookup's probe and the open's rest")
            #expect(origin.bodyBytesSent("/p/entry.jpg") == image.count, "no byte sent twice")
        }
    }
}
