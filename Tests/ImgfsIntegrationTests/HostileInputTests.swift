import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Testing

/// Issue 34 through real mounts: values from outside (an origin's headers, a Redis value) that used to crash or
/// mislead the daemon. Each test checks the mount is still alive afterwards and nothing wrong was cached.
@Suite("Hostile input", .serialized, .enabled(if: FuseAvailability.available))
struct HostileInputTests {
    /// Whether the daemon still runs and still answers (a `stat` of the mount's control folder).
    static func alive(_ mount: MountedImgfs) -> Bool {
        var status = stat()
        return mount.process.isRunning && mount.isMounted && stat("\(mount.mountPoint)/.imgfs", &status) == 0
    }

    @Test(
        "Cache-Control: max-age=Int.max with --shared-cache and --cache-control: the image is served, the mount lives",
        .enabled(if: RedisServer.available))
    func hugeMaxAge() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        var response = OriginResponse.ok(image, contentType: "image/png")
        response.headers.append(("Cache-Control", "max-age=9223372036854775807"))
        var infinite = OriginResponse.ok(image, contentType: "image/png")
        infinite.headers.append(("Cache-Control", "max-age=1e400"))
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--cache-control"])) { origin, mount in
            origin.route("/forever.png", response)
            origin.route("/infinite.png", infinite)
            let forever = origin.baseURL + "/forever.png"
            #expect(SharedTierTests.outcome(mount.path(forever), image) == "same bytes")
            #expect(mount.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 1 })
            #expect(Self.alive(mount), "the daemon died; log:\n\(mount.log.suffix(2000))")
            // Published with the longest lifetime HTTP asks a cache to represent (2^31 s), not refused or wrapped.
            let ttl = Int(try redis.cli("PTTL", SharedTierKeys(url: try ImageURL(forever)).meta)) ?? -1
            #expect(ttl > 2_000_000_000_000 && ttl <= 2_147_483_648_000, "PTTL \(ttl)")
            // A max-age that is not delta-seconds is ignored (the --expire lifetime applies).
            #expect(SharedTierTests.outcome(mount.path(origin.baseURL + "/infinite.png"), image) == "same bytes")
            #expect(Self.alive(mount))
        }
    }

    @Test(
        "records planted in Redis with out-of-range dates, sizes or piece sizes are refused, logged once, refetched",
        .enabled(if: RedisServer.available))
    func outOfRangeRecords() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        // The checksum is never reached: each record is refused for its range before its pieces are read.
        let checksum = 0
        let size = image.count
        // Each a well-formed version-2 record for its URL, sealed as a mount without a key file seals it (so that the
        // range checks are what refuses it), wrong in one field.
        let fields = [
            "huge-expiry": #""expiresAt":1e300,"size":\#(size),"contentLength":\#(size)"#,
            "negative-expiry": #""expiresAt":-1e300,"size":\#(size)"#,
            "huge-mtime": #""expiresAt":4102444800000,"lastModified":1e300,"size":\#(size)"#,
            "max-size": #""expiresAt":4102444800000,"size":9223372036854775807"#,
            "negative-size": #""expiresAt":4102444800000,"size":-5"#,
            "huge-length": #""expiresAt":4102444800000,"size":\#(size),"contentLength":9223372036854775807"#,
            "zero-piece": #""expiresAt":4102444800000,"size":\#(size),"pieceSize":0"#,
            "max-piece": #""expiresAt":4102444800000,"size":\#(size),"pieceSize":9223372036854775807"#
        ]
        try withMountedOrigin(SharedTierTests.memberArguments(redis)) { origin, mount in
            for (name, field) in fields {
                origin.route("/\(name).png", .ok(image, contentType: "image/png"))
                let url = "\(origin.baseURL)/\(name).png"
                let pieceSize = field.contains("pieceSize") ? "" : #","pieceSize":1048576"#
                let record =
                    #"{"version":2,"url":"\#(url)","fetch":"planted","checksum":\#(checksum),"#
                    + field + pieceSize + "}"
                let keys = SharedTierKeys(url: try ImageURL(url))
                let seal = SharedTierSeal()
                try redis.set(keys.meta, bytes: seal.seal(Array(record.utf8), key: keys.meta))
                let piece = keys.piece("planted", 0)
                try redis.set(piece, bytes: seal.seal(SharedTierPiece.encode(index: 0, bytes: image), key: piece))
            }
            for name in fields.keys.sorted() {
                let path = mount.path("\(origin.baseURL)/\(name).png")
                // Twice: the second read is served by the mount's own caches, and a stat asks for the mtime.
                #expect(SharedTierTests.outcome(path, image) == "same bytes", "\(name)")
                #expect(SharedTierTests.outcome(path, image) == "same bytes", "\(name)")
                var status = stat()
                #expect(stat(path, &status) == 0 && status.st_mtim.tv_sec < 4_102_444_800, "\(name)")
                #expect(origin.requestCount("/\(name).png") == 1, "\(name) was not fetched from the origin once")
                #expect(Self.alive(mount), "\(name) killed the daemon; log:\n\(mount.log.suffix(2000))")
            }
            #expect((mount.statistics()["repository.shared_tier.rejected"] ?? 0) >= Double(fields.count))
            let refusals = mount.log.split(separator: "\n").filter { $0.contains("ignored the stored value") }
            #expect(refusals.count == fields.count, "\(refusals)")
        }
    }

    @Test("two Content-Length headers that disagree: EIO, nothing cached, the reason in imgfs why")
    func conflictingContentLength() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        #expect(image.count > 100)
        var response = OriginResponse.ok(image, contentType: "image/png")
        // The origin's own Content-Length (the body's size) first, then a second, smaller one.
        response.headers.append(("Content-Length", "100"))
        try withMountedOrigin { origin, mount in
            origin.route("/two.png", response)
            let url = origin.baseURL + "/two.png"
            #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EIO)))
            #expect(Self.alive(mount))
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("conflicting Content-Length"), "\(why.output)")
            // Nothing was kept: once the origin answers properly, the whole image is served.
            origin.route("/two.png", .ok(image, contentType: "image/png"))
            let reread = Poll.until(timeout: 10, interval: 0.2) {
                PosixFile.read(mount.path(url)) == .success(image)
            }
            #expect(reread, "the 100-byte prefix was cached as the image")
            // The whole image's own disk write (a temporary file, then a rename) ends first.
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 1 })
            let files = FileManager.default.enumerator(atPath: mount.cacheDirectory)?.allObjects as? [String] ?? []
            #expect(files.contains { $0.hasSuffix(".tmp") } == false)
        }
    }
}

extension HostileInputTests {
    /// The path of `url`'s chunked form under `mount` (every directory but the last is a continuation).
    static func chunkedPath(_ url: String, in mount: MountedImgfs) throws -> String {
        let chunks = ImagePath.chunks(of: NameCodec.encode(url))
        return "\(mount.mountPoint)/img/+/" + chunks.joined(separator: "/")
    }

    @Test("lookups of 300 long names of 404s leave nothing on disk; a fetched long URL's digest name survives remount")
    func longNameRegistryIsBounded() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        origin.route(prefix: "/gone/") { _ in .status(404) }
        origin.route(prefix: "/kept/") { _ in .ok(image, contentType: "image/png") }
        let padding = String(repeating: "s", count: 400)
        let cacheDirectory = "/tmp/imgfs-test-\(getpid())-names-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: cacheDirectory) }
        let mount = try MountedImgfs(cacheDirectory: cacheDirectory)
        for index in 0..<300 {
            var status = stat()
            #expect(
                stat(try Self.chunkedPath("\(origin.baseURL)/gone/\(index).png?sig=\(padding)", in: mount), &status)
                    != 0)
        }
        #expect(Self.alive(mount))
        let kept = "\(origin.baseURL)/kept/a.png?sig=\(padding)"
        #expect(PosixFile.read(try Self.chunkedPath(kept, in: mount)) == .success(image))
        let digest = ImagePath.digestName(for: try ImageURL(kept))
        #expect(PosixFile.read("\(mount.mountPoint)/img/\(digest)") == .success(image))
        mount.stop()
        let files = FileManager.default.enumerator(atPath: cacheDirectory)?.allObjects as? [String] ?? []
        #expect(files.count < 40, "\(files.count) files in the cache directory: \(files.prefix(10))")
        #expect(!files.contains { $0.hasPrefix("names") })
        let again = try MountedImgfs(cacheDirectory: cacheDirectory)
        defer { again.stop() }
        #expect(PosixFile.read("\(again.mountPoint)/img/\(digest)") == .success(image))
        #expect(origin.requestCount("/kept/a.png?sig=\(padding)") == 1, "a remount resolves it from the disk cache")
    }
}

extension HostileInputTests {
    @Test("list add on a full disk: a readable error, non-zero exit, no temporary file left; a non-UTF-8 name refused")
    func listAddFailures() throws {
        // The cache directory on a 1 MiB tmpfs of the test's own, filled up after the mount started.
        let cacheDirectory = "/tmp/imgfs-test-\(getpid())-full-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: cacheDirectory) }
        // mode=0700: imgfs refuses a cache directory others may write to (a tmpfs is 1777 by default).
        let mounted = try ChildProcess.run(
            "/bin/mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", cacheDirectory])
        try #require(mounted.status == 0, "\(mounted.output)")
        defer { _ = try? ChildProcess.run("/bin/umount", ["-l", cacheDirectory]) }
        let fixture = try ListFixture(cacheDirectory: cacheDirectory)
        defer { fixture.stop() }
        #expect(try fixture.add("small", fixture.url(1) + "\n").status == 0)
        let filler = try ChildProcess.run("/bin/dd", ["if=/dev/zero", "of=\(cacheDirectory)/filler", "bs=64k"])
        #expect(filler.output.contains("No space left"), "\(filler.output)")
        let text = (0..<2000).map { fixture.url($0) }.joined(separator: "\n")
        let full = try fixture.add("big", text)
        #expect(full.status != 0)
        #expect(full.output.contains("cannot write the list big: No space left on device"), "\(full.output)")
        #expect(!full.output.contains("NSCocoaErrorDomain") && !full.output.contains("Code="), "\(full.output)")
        // small.facts holds what list add's probes taught the list small (no temporary file of big is left).
        let left = (try? FileManager.default.contentsOfDirectory(atPath: "\(cacheDirectory)/lists")) ?? []
        #expect(left.filter { $0 != "small.facts" } == ["small.list"], "\(left)")
        try FileManager.default.removeItem(atPath: "\(cacheDirectory)/filler")
        // A name whose bytes are not UTF-8 is refused, not stored under a changed name.
        let file = "\(fixture.mount.root)/one.txt"
        try (fixture.url(2) + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let invalid = try ChildProcess.run(
            "/bin/sh",
            [
                "-c", #"exec "$0" list add "$1" "$(printf 'bad\377name')" "$2""#, MountedImgfs.binary,
                fixture.mount.mountPoint, file
            ])
        #expect(invalid.status != 0)
        #expect(invalid.output.contains("valid UTF-8"), "\(invalid.output)")
        let after = (try? FileManager.default.contentsOfDirectory(atPath: "\(cacheDirectory)/lists")) ?? []
        #expect(after.filter { $0 != "small.facts" } == ["small.list"], "\(after)")
    }
}

extension HostileInputTests {
    @Test(
        "--allow-host: a redirect to a host it refuses is refused before any DNS look-up (EACCES, not host not found)")
    func redirectRefusedBeforeDNS() throws {
        try withMountedOrigin(["--allow-host", "127.0.0.1"]) { origin, mount in
            // A name only DNS could answer (and .invalid never resolves): had imgfs looked it up, the failure would
            // be "host not found"; refused first, it is EACCES with the policy's reason.
            origin.route("/away.png", .redirect(to: "http://imgfs-test-host.invalid.:\(origin.port)/x.png"))
            origin.route("/local.png", .redirect(to: "http://localhost.:\(origin.port)/x.png"))
            for path in ["/away.png", "/local.png"] {
                let url = origin.baseURL + path
                #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EACCES)), "\(path)")
                let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
                #expect(why.output.contains("refused") && why.output.contains("not an allowed host"), "\(why.output)")
            }
            #expect(!mount.log.contains("host not found"))
        }
    }

    @Test("a header line larger than libcurl's limit is EIO with a reason that says so, not \"Out of memory\"")
    func hugeHeader() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        var response = OriginResponse.ok(image, contentType: "image/png")
        response.headers.append(("X-Padding", String(repeating: "p", count: 200 * 1024)))
        try withMountedOrigin { origin, mount in
            origin.route("/big-header.png", response)
            let url = origin.baseURL + "/big-header.png"
            #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EIO)))
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("header is too large"), "\(why.output)")
            #expect(Self.alive(mount))
        }
    }
}
