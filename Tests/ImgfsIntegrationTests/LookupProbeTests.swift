import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 37, item 1, through a real mount: a `stat` by path of an uncached image (`img/<url>`, or a list entry with no
/// listing of its folder open) costs about a probe, not a download: its lookup's whole GET stops after the probe's
/// first bytes when no open joins it in time. A read afterwards continues from there (`Range` + `If-Range`), or starts
/// over when the image changed or has no strong validator (never a mix); `cat` alone stays one GET.
@Suite("A stat by path costs a probe", .serialized, .enabled(if: FuseAvailability.available))
struct LookupProbeTests {
    /// The probe size (``ImageRepository/probeBytes``).
    private static let probe = 64 << 10
    /// More than the grace time a lookup's paused transfer waits for an open (``FetcherConfiguration/probeGrace``).
    private static let afterGrace: useconds_t = 1_200_000
    /// The most the origin may send for a stat by path of the 32 MiB image: the probe, the 2 MiB a lookup by a caller
    /// not seen before goes on for (``FetcherConfiguration/openWindowBytes``), and what the origin's send buffer and
    /// imgfs's receive buffers hold on loopback (4-7 MiB measured); a download would be all 32.
    private static let statBound = 12 << 20

    /// A 32 MiB JPEG: a real wallpaper's bytes, then noise (what matters is its size and that it starts as a JPEG).
    private static func hugeImage(seed: UInt8 = 1) throws -> [UInt8] {
        var image = try Fixtures.largeJPEG()
        var value = UInt32(seed) &* 2_654_435_761
        image.reserveCapacity(32 << 20)
        while image.count < 32 << 20 {
            value = value &* 1_103_515_245 &+ 12345
            image.append(UInt8(truncatingIfNeeded: value >> 16))
        }
        return image
    }

    /// The body bytes the origin sent for `path` once they stopped growing (checked every 200 ms), or after 10 s.
    private static func settledSent(_ origin: TestOrigin, _ path: String) -> Int {
        var last = -1
        _ = Poll.until(timeout: 10, interval: 0.2) {
            let now = origin.bodyBytesSent(path)
            defer { last = now }
            return now == last
        }
        return origin.bodyBytesSent(path)
    }

    /// Whether `path` reads as exactly `bytes` (a Bool, so a failure does not print a diff of megabytes).
    private static func reads(_ path: String, _ bytes: [UInt8]) -> Bool {
        guard case .success(let read) = PosixFile.read(path) else { return false }
        return read == bytes
    }

    /// The requests the origin got for `path`.
    private static func requests(_ origin: TestOrigin, _ path: String) -> [RecordedRequest] {
        origin.requests().filter { $0.path == path }
    }

    /// A stat of `file` (an uncached image of `image`'s bytes at the origin's `path`) costs a lookup's whole GET cut
    /// short; a read after the grace time continues it from the probe's end with `If-Range`.
    private static func statThenRead(
        _ file: String, _ path: String, _ image: [UInt8], origin: TestOrigin
    ) {
        #expect(PosixFile.size(file) == .success(image.count))
        usleep(afterGrace)
        let sentForStat = settledSent(origin, path)
        // What the origin sent includes what stayed in its socket's send buffer and imgfs's receive buffer.
        #expect(sentForStat > 0 && sentForStat < statBound, "stat: \(sentForStat) of \(image.count) bytes sent")
        #expect(requests(origin, path).map { $0.header("Range") } == [nil], "one whole GET, stopped")
        #expect(reads(file, image), "the exact image")
        let all = requests(origin, path)
        #expect(all.count == 2, "the stat's GET and the rest")
        #expect(all.last?.header("Range") == "bytes=\(probe)-", "the read continues after the probe's bytes")
        #expect(all.last?.header("If-Range") == "\"v1\"")
        let sentForRead = settledSent(origin, path) - sentForStat
        #expect(sentForRead == image.count - probe, "the probe's bytes are not sent again")
        print("stat by path of \(image.count) bytes: the origin sent \(sentForStat) bytes")
    }

    @Test("stat of img/<url> of a 32 MiB image stops after the probe; a read then fetches only the rest, exactly")
    func statByPathThenRead() throws {
        let image = try Self.hugeImage()
        let images = ProbeIntegrationTests.RangedImages(["big.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            Self.statThenRead(mount.path("\(origin.baseURL)/p/big.jpg"), "/p/big.jpg", image, origin: origin)
        }
    }

    @Test("stat of a list entry with no listing open stops after the probe; a read then fetches only the rest")
    func statOfListEntryThenRead() throws {
        let image = try Self.hugeImage(seed: 2)
        let images = ProbeIntegrationTests.RangedImages(["entry.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let file = "\(mount.root)/one.txt"
            try "\(origin.baseURL)/p/entry.jpg\n".write(toFile: file, atomically: true, encoding: .utf8)
            let added = try ChildProcess.run(
                MountedImgfs.binary, ["list", "add", "--no-probe", mount.mountPoint, "one", file])
            #expect(added.status == 0, "\(added.output)")
            let folder = "\(mount.mountPoint)/lists/one"
            let entry = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first)
            // The kernel tells imgfs that the listing was closed (RELEASEDIR) a moment after closedir returned.
            usleep(300_000)
            Self.statThenRead("\(folder)/\(entry)", "/p/entry.jpg", image, origin: origin)
        }
    }

    @Test("cat of an uncached 32 MiB image is one whole GET, every byte sent once")
    func catIsOneRequest() throws {
        let image = try Self.hugeImage(seed: 3)
        let images = ProbeIntegrationTests.RangedImages(["cat.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            #expect(Self.reads(mount.path("\(origin.baseURL)/p/cat.jpg"), image))
            #expect(Self.requests(origin, "/p/cat.jpg").map { $0.header("Range") } == [nil], "one whole GET")
            #expect(Self.settledSent(origin, "/p/cat.jpg") == image.count)
        }
    }

    @Test("a thread's lookup goes on past the probe while it reads what it looks up (or is new), not while it stats")
    func threadsThatRead() throws {
        // 512 KiB: a lookup that goes on past the probe (10 ms, 2 MiB) takes all of it over loopback at once.
        let image = Array(try Self.hugeImage(seed: 9).prefix(512 << 10))
        let names = ["a", "b", "c", "d"].map { "\($0).jpg" }
        let images = ProbeIntegrationTests.RangedImages(Dictionary(uniqueKeysWithValues: names.map { ($0, image) }))
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let files = names.map { mount.path("\(origin.baseURL)/p/\($0)") }
            // One thread throughout: the kernel names it in every request.
            let finished = DispatchSemaphore(value: 0)
            Thread {
                _ = PosixFile.size(files[0])  // new: expected to open
                _ = PosixFile.size(files[1])  // did not open a.jpg: a stat
                _ = PosixFile.read(files[2])  // not expected to open, but it does
                _ = PosixFile.size(files[3])  // opened what it looked up: expected to open
                finished.signal()
            }.start()
            #expect(finished.wait(timeout: .now() + 20) == .success)
            usleep(Self.afterGrace)
            for (name, file) in zip(names, files) { #expect(Self.reads(file, image), "\(name) exact") }
            let ranges = names.map { name in Self.requests(origin, "/p/\(name)").map { $0.header("Range") } }
            #expect(ranges[0] == [nil], "a new thread's stat went on and took the whole image: one GET")
            #expect(ranges[1] == [nil, "bytes=\(Self.probe)-"], "a stat after a stat stopped at the probe")
            #expect(ranges[2] == [nil], "cat: one GET")
            #expect(ranges[3] == [nil], "a stat by a thread that reads went on: one GET")
        }
    }

    @Test("a read within the grace time after a stat by path resumes the paused GET: one request, every byte once")
    func readSoonAfterStat() throws {
        let image = try Self.hugeImage(seed: 8)
        let images = ProbeIntegrationTests.RangedImages(["soon.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let file = mount.path("\(origin.baseURL)/p/soon.jpg")
            #expect(PosixFile.size(file) == .success(image.count))
            usleep(100_000)  // well past the probe's bytes on loopback, well within the grace time
            #expect(Self.reads(file, image))
            #expect(Self.requests(origin, "/p/soon.jpg").map { $0.header("Range") } == [nil], "one whole GET")
            #expect(Self.settledSent(origin, "/p/soon.jpg") == image.count)
        }
    }

    @Test("an image that changed between a stat by path and the read is read whole in its new version, never mixed")
    func changedBetweenStatAndRead() throws {
        let image = try Self.hugeImage(seed: 4)
        let changed = try Array(Self.hugeImage(seed: 5).prefix(image.count - 5000))
        let images = ProbeIntegrationTests.RangedImages(["c.jpg": image])
        try withMountedOrigin { origin, mount in
            images.route(on: origin)
            let file = mount.path("\(origin.baseURL)/p/c.jpg")
            #expect(PosixFile.size(file) == .success(image.count))
            usleep(Self.afterGrace)
            images.change("c.jpg", to: changed)
            #expect(Self.reads(file, changed), "the new version, whole")
            #expect(PosixFile.size(file) == .success(changed.count))
            #expect(Self.requests(origin, "/p/c.jpg").last?.header("If-Range") == "\"v1\"", "asked to continue v1")
            #expect(Self.reads(file, changed))
        }
    }

    @Test("an image without a strong validator is read whole from byte 0 after a stat by path, never continued")
    func noValidatorStartsOver() throws {
        let image = try Self.hugeImage(seed: 6)
        try withMountedOrigin { origin, mount in
            origin.route("/p/plain.jpg", .ok(image, contentType: "image/jpeg"))
            let file = mount.path("\(origin.baseURL)/p/plain.jpg")
            #expect(PosixFile.size(file) == .success(image.count))
            usleep(Self.afterGrace)
            let sentForStat = Self.settledSent(origin, "/p/plain.jpg")
            #expect(sentForStat < Self.statBound, "stat: \(sentForStat) bytes sent")
            #expect(Self.reads(file, image), "the exact image")
            let ranges = Self.requests(origin, "/p/plain.jpg").map { $0.header("Range") }
            #expect(ranges == [nil, nil], "nothing to continue safely: the read starts over")
        }
    }

    @Test("over HTTP/2 too: a stat by path stops after the probe, a read then continues with a range")
    func overHTTP2() throws {
        let image = try Self.hugeImage(seed: 7)
        // `combined` lines: the request's status (9th field) and $body_bytes_sent (10th), logged when it ends.
        let log = "/tmp/imgfs-h2-bytes-\(getpid())-\(UUID().uuidString.prefix(8)).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let origin = try TLSTests.TLSOrigin(
            files: ["h.jpg": image], locations: "location / { access_log \(log) combined; }")
        defer { origin.stop() }
        let mount = try MountedImgfs(arguments: ["--insecure"])
        defer { mount.stop() }
        func served(atLeast count: Int) -> [(protocol: String, status: String, bytes: Int)] {
            func lines() -> [[String]] {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map {
                    $0.split(separator: " ").map(String.init)
                }
            }
            Poll.until(timeout: 5) { lines().count >= count }
            return lines().compactMap { $0.count > 9 ? ($0[7], $0[8], Int($0[9]) ?? -1) : nil }
        }
        let file = mount.path(origin.baseURL + "/h.jpg")
        #expect(PosixFile.size(file) == .success(image.count))
        usleep(Self.afterGrace)
        #expect(Self.reads(file, image), "the exact image")
        // nginx logs the stat's stream once it hears of its end: when the connection is used again, by the read.
        let served = served(atLeast: 2)
        #expect(served.allSatisfy { $0.protocol == "HTTP/2.0\"" })
        #expect(served.map(\.status) == ["200", "206"], "the stat's GET, then the rest after the probe's bytes")
        let sentForStat = served.first?.bytes ?? -1
        #expect(sentForStat >= 0 && sentForStat < Self.statBound, "stat: \(sentForStat) bytes sent")
        #expect(served.last?.bytes == image.count - Self.probe)
        print("stat by path over HTTP/2 of \(image.count) bytes: nginx sent \(sentForStat) bytes")
    }
}
