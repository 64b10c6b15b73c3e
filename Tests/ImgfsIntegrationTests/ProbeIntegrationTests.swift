import Foundation
import Glibc
import ImgfsTestSupport
import Synchronization
import Testing

/// Issue 37, item 1, through a real mount: a stat of an uncached image costs a probe of its first bytes, an open
/// afterwards fetches only the rest, an image that changed in between is read whole in its new version (or fails,
/// never mixed), and a cold read (lookup, then open) is one whole GET.
@Suite("Header probes instead of downloads", .serialized, .enabled(if: FuseAvailability.available))
struct ProbeIntegrationTests {
    /// The probe size (``ImageRepository/probeBytes``).
    private static let probe = 64 << 10

    /// Images at `/p/<name>.jpg` that answer `Range` (`bytes=A-B` and `bytes=N-`, with `If-Range` against their
    /// ETag) as an origin with byte ranges does; ``change(_:)`` gives one a new version with a new ETag.
    final class RangedImages: Sendable {
        private let versions: Mutex<[String: (body: [UInt8], tag: Int)]>
        /// Seconds a probe's answer (`Range: bytes=0-…`) holds its head back; its body is the version asked for.
        private let probeDelay: Double

        init(_ bodies: [String: [UInt8]], probeDelay: Double = 0) {
            versions = Mutex(bodies.mapValues { ($0, 1) })
            self.probeDelay = probeDelay
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
                var partial = OriginResponse(status: 206, headers: headers + [content], body: Array(body[range]))
                if range.lowerBound == 0 { partial.headerDelay = probeDelay }
                return partial
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

    /// The body bytes the origin sent for `path`, once at least `atLeast` (the origin counts a write after it returned,
    /// which may be after the reader got the bytes), or after 5 s.
    private static func sent(_ origin: TestOrigin, _ path: String, atLeast: Int = 1) -> Int {
        _ = Poll.until(timeout: 5) { origin.bodyBytesSent(path) >= atLeast }
        return origin.bodyBytesSent(path)
    }

    /// Whether `path` reads as exactly `bytes` (a Bool, so a failure does not print a diff of megabytes).
    private static func reads(_ path: String, _ bytes: [UInt8]) -> Bool {
        guard case .success(let read) = PosixFile.read(path) else { return false }
        return read == bytes
    }

    /// `ls -l` of `folder` (its entries are looked up while its listing is open: probes); the sizes it printed.
    private static func listLong(_ folder: String) throws -> [Int] {
        let listed = try ChildProcess.run("/bin/ls", ["-l", folder])
        #expect(listed.status == 0, "\(listed.output)")
        return listed.output.split(separator: "\n").dropFirst().compactMap { line in
            Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first ?? "")
        }
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
            #expect(try Self.listLong("\(mount.mountPoint)/lists/big") == names.map { _ in image.count })
            for entry in entries { #expect(PosixFile.size(entry) == .success(image.count)) }
            for name in names {
                let sent = Self.sent(origin, "/p/\(name)")
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
            #expect(try Self.listLong("\(mount.mountPoint)/lists/one") == [image.count])
            #expect(Self.sent(origin, "/p/a.jpg", atLeast: Self.probe) == Self.probe)
            #expect(Self.reads(entry, image))
            #expect(Self.sent(origin, "/p/a.jpg", atLeast: image.count) == image.count, "every byte sent once")
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
            #expect(try Self.listLong("\(mount.mountPoint)/lists/two") == [image.count])
            images.change("c.jpg", to: changed)
            #expect(Self.reads(entry, changed), "the new version, whole")
            #expect(PosixFile.size(entry) == .success(changed.count))
            #expect(Self.reads(entry, changed))
        }
    }

    @Test("a server that ignores Range: ls -l cuts its answer after the probe, a read then gets the image whole")
    func serverIgnoringRange() throws {
        let image = try Self.largeImage()
        try withMountedOrigin { origin, mount in
            origin.route("/p/plain.jpg", .ok(image, contentType: "image/jpeg"))
            let entry = try #require(try Self.addList("plain", ["plain.jpg"], origin: origin, mount: mount).first)
            #expect(try Self.listLong("\(mount.mountPoint)/lists/plain") == [image.count])
            #expect(Self.sent(origin, "/p/plain.jpg") < image.count, "cut off after the probe")
            #expect(Self.reads(entry, image))
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
            #expect(Self.sent(origin, "/p/raw") <= Self.probe, "a probe, not a download")
        }
    }

    @Test("list add's probes teach the list each large image's format and dimensions, for no more than the probe")
    func listAddProbesTeachFacts() throws {
        let image = try Self.largeImage()
        let names = (0..<3).map { "\($0).jpg" }
        let images = RangedImages(Dictionary(uniqueKeysWithValues: names.map { ($0, image) }))
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            // What Pillow reads of the same bytes on a local disk.
            let local = "\(mount.root)/local.jpg"
            #expect(FileManager.default.createFile(atPath: local, contents: Data(image)))
            let pillow = try ChildProcess.run(
                "/usr/bin/python3",
                ["-c", "import sys; from PIL import Image; print(*Image.open(sys.argv[1]).size)", local])
            let size = pillow.output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            try #require(size.count == 2, "\(pillow.output)")
            let file = "\(mount.root)/facts.txt"
            let text = names.map { "\(origin.baseURL)/p/\($0)" }.joined(separator: "\n") + "\n"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let added = try ChildProcess.run(MountedImgfs.binary, ["list", "add", mount.mountPoint, "facts", file])
            #expect(added.status == 0, "\(added.output)")
            // The facts are recorded off the FUSE threads from the probes' first bytes (no transfer goes further).
            let index = "\(mount.mountPoint)/lists/facts/.index.jsonl"
            func rows() -> [[String: Any]] {
                ((try? String(contentsOfFile: index, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
            }
            Poll.until(timeout: 10) { rows().count == 3 && rows().allSatisfy { $0["width"] as? Int == size[0] } }
            let known = rows()
            #expect(known.count == 3)
            for row in known {
                #expect(row["format"] as? String == "jpeg" && row["size"] as? Int == image.count, "\(row)")
                #expect(row["width"] as? Int == size[0] && row["height"] as? Int == size[1], "\(row)")
            }
            for name in names {
                #expect(origin.requestCount("/p/\(name)") == 1, "one probe per entry")
                #expect(Self.sent(origin, "/p/\(name)") <= Self.probe, "\(name): a probe, not a download")
            }
        }
    }

    @Test("a cold read (lookup, then open) makes one whole GET, under img/ and of a list entry")
    func coldRead() throws {
        let image = try Self.largeImage()
        let images = RangedImages(["cold.jpg": image, "entry.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            #expect(Self.reads(mount.path("\(origin.baseURL)/p/cold.jpg"), image))
            #expect(origin.requestCount("/p/cold.jpg") == 1, "one GET")
            #expect(Self.sent(origin, "/p/cold.jpg", atLeast: image.count) == image.count)
            let entry = try #require(try Self.addList("cold", ["entry.jpg"], origin: origin, mount: mount).first)
            // The kernel tells imgfs that a listing was closed (RELEASEDIR) a moment after closedir returned.
            usleep(300_000)
            #expect(Self.reads(entry, image))
            #expect(origin.requestCount("/p/entry.jpg") == 1, "the lookup starts nothing; the open one GET")
            #expect(Self.sent(origin, "/p/entry.jpg", atLeast: image.count) == image.count, "no byte sent twice")
            let ranges = origin.requests().filter { $0.path.hasPrefix("/p/") }.map { $0.header("Range") }
            #expect(ranges == [nil, nil], "whole GETs, not probes")
        }
    }

    @Test("a program that stats every entry of an open listing gets probes; a stat by path alone one GET")
    func scandirProbesStatByPathReads() throws {
        let image = try Self.largeImage()
        let images = RangedImages(["x.jpg": image, "y.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let entries = try Self.addList("scan", ["x.jpg", "y.jpg"], origin: origin, mount: mount)
            let script = "import os,sys\nfor e in os.scandir(sys.argv[1]): print(e.stat().st_size)\n"
            let scanned = try ChildProcess.run("/usr/bin/python3", ["-c", script, "\(mount.mountPoint)/lists/scan"])
            #expect(scanned.status == 0, "\(scanned.output)")
            #expect(scanned.output.split(separator: "\n") == ["\(image.count)", "\(image.count)"])
            #expect(Self.sent(origin, "/p/x.jpg", atLeast: Self.probe) == Self.probe)
            #expect(Self.sent(origin, "/p/y.jpg", atLeast: Self.probe) == Self.probe)
            // Later, by path, with no listing open (the kernel forgot the names after 1 s): the probe answers.
            usleep(1_200_000)
            #expect(PosixFile.size(entries[0]) == .success(image.count))
            #expect(origin.requestCount("/p/x.jpg") == 1, "the probe's size, kept")
            let path = mount.path("\(origin.baseURL)/p/z.jpg")
            images.change("z.jpg", to: image)
            #expect(PosixFile.size(path) == .success(image.count))
            #expect(origin.requests().last?.header("Range") == nil, "by path: a lookup's whole GET")
        }
    }

    @Test("an image that changes while a listing's probe is under way and an open waits on it is never read mixed")
    func changedWhileProbeUnderWay() throws {
        let image = try Self.largeImage()
        let changed = Array(image.prefix(4)) + Array(image.dropFirst(4).reversed()) + Array(repeating: 7, count: 1000)
        let images = RangedImages(["race.jpg": image], probeDelay: 1.0)
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let entry = try #require(try Self.addList("race", ["race.jpg"], origin: origin, mount: mount).first)
            // Job 0 lists the folder (a probe, held back 1 s); job 1 opens and reads while it is under way, after
            // the change.
            let results = ParallelThreads.run(2) { job -> Result<[UInt8], Errno> in
                if job == 0 {
                    return (try? Self.listLong("\(mount.mountPoint)/lists/race")) == [image.count]
                        ? .success([]) : .failure(Errno(0))
                }
                usleep(300_000)
                images.change("race.jpg", to: changed)
                return PosixFile.read(entry)
            }
            #expect(try results[0].get() == [])
            switch results[1] {
            case .success(let bytes):
                let whole = bytes == changed || bytes == image
                #expect(whole, "one version, whole: \(bytes.count) bytes")
            case .failure(let error): #expect(error == Errno(EIO), "or an error, never a mix")
            }
            #expect(origin.requests().first?.header("Range") == "bytes=0-\(Self.probe - 1)", "the listing's probe")
            #expect(Self.reads(entry, changed), "the next read: the new version, whole")
            #expect(PosixFile.size(entry) == .success(changed.count))
        }
    }
}
