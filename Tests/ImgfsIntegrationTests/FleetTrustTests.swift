import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Testing

/// Issue 36, items 1 to 3, through real mounts and a real `redis-server`: what one member of a fleet (or anyone who
/// can write to its Redis) must not be able to do to the others.
@Suite("Fleet trust", .serialized, .enabled(if: FuseAvailability.available && RedisServer.available))
struct FleetTrustTests {
    /// A temporary directory for policy and key files, removed with the object.
    final class Scratch {
        let path = "/tmp/imgfs-fleet-\(getpid())-\(UUID().uuidString.prefix(8))"

        init() throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// Writes `text` to `name` (mode `mode`) and returns its path.
        func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let file = "\(path)/\(name)"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
            return file
        }
    }

    @Test("a policy rule's deny: true refuses the image in memory, on disk and in Redis (EACCES, no origin GET)")
    func denyAppliesToEveryTier() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let scratch = try Scratch()
        let cache = CachingIntegrationTests.SharedCache()
        let icon = try Fixtures.smallPNGs(1)[0]
        let allow = try scratch.write("policy.yaml", "rules:\n  - host: \"*\"\n    deny: false\n")
        let deny = try scratch.write("deny.yaml", "rules:\n  - host: 127.0.0.1\n    deny: true\n")
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/icon.png", .ok(icon, contentType: "image/png"))
        let url = origin.baseURL + "/icon.png"
        // Memory: the mount that fetched it, after its policy file says deny and is reloaded.
        let first = try SharedTierTests.member(redis, ["--policy-file", allow], cacheDirectory: cache.path)
        #expect(PosixFile.read(first.path(url)) == .success(icon))
        #expect(first.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 1 })
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        try FileManager.default.removeItem(atPath: allow)
        try FileManager.default.copyItem(atPath: deny, toPath: allow)
        let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", first.mountPoint])
        #expect(reload.status == 0, "\(reload.output)")
        #expect(SharedTierTests.outcome(first.path(url), icon) == "\(Errno(EACCES))", "memory")
        first.stop()
        // Disk: a mount on the same cache directory; Redis: a mount with a cache of its own.
        for (name, directory) in [("disk", cache.path), ("Redis", nil as String?)] {
            let mount = try SharedTierTests.member(redis, ["--policy-file", deny], cacheDirectory: directory)
            defer { mount.stop() }
            #expect(SharedTierTests.outcome(mount.path(url), icon) == "\(Errno(EACCES))", "\(name)")
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("denied by the policy rule 127.0.0.1"), "\(name): \(why.output)")
            #expect(mount.statistics()["repository.shared_tier.hits"] ?? 0 == 0, "\(name)")
        }
        #expect(origin.requestCount("/icon.png") == 1, "refused without a request")
    }

    /// CRC-32 (zlib's), as a forger computes it.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    /// Writes into Redis what anyone who can write to it would to replace `url` with `body`, claiming `size` bytes:
    /// a version-1 record and piece with a correct CRC-32 (what mounts read before values were sealed), and the same
    /// in version 2 sealed as a fleet without a key file seals it.
    static func plantForgery(_ redis: RedisServer, url: String, body: [UInt8], size: Int) throws {
        let keys = SharedTierKeys(url: try ImageURL(url))
        let crc = crc32(body)
        let record =
            #"{"version":1,"url":"\#(url)","fetch":"planted","expiresAt":4102444800000,"pieceSize":1048576,"#
            + #""size":\#(size),"contentLength":\#(size),"checksum":\#(crc)}"#
        try redis.set("imgfs:v1:meta:\(keys.hash)", bytes: Array(record.utf8))
        let piece = Array("IMP1".utf8) + bigEndian(0) + bigEndian(UInt32(body.count)) + bigEndian(crc) + body
        try redis.set("imgfs:v1:piece:\(keys.hash):planted:0", bytes: piece)
        let keyless = SharedTierSeal()
        var forged = SharedTierRecord(
            url: url, fetch: "planted", head: ResponseHead(status: 200, contentLength: size, contentType: "image/png"),
            expiresAt: Date(timeIntervalSince1970: 4_102_444_800), pieceSize: 1 << 20)
        forged.size = size
        forged.checksum = crc
        var digest = SHA256()
        digest.update(body)
        forged.sha256 = digest.finish().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        try redis.set(keys.meta, bytes: keyless.seal(forged.encoded(), key: keys.meta))
        let pieceKey = keys.piece("planted", 0)
        try redis.set(pieceKey, bytes: keyless.seal(SharedTierPiece.encode(index: 0, bytes: body), key: pieceKey))
    }

    @Test("with a fleet key, forged values (another image, a size of Int.max) are ignored; 2 mounts make 1 GET per URL")
    func forgeriesAreIgnored() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let scratch = try Scratch()
        let key = try scratch.write("fleet.key", "fleet-key-\(UUID().uuidString)\n")
        let images = try Fixtures.smallPNGs(2)
        let (real, fake) = (images[0], images[1])
        #expect(real != fake)
        let keyed = ["--shared-cache-key-file", key]
        try withMountedOrigin(SharedTierTests.memberArguments(redis, keyed)) { origin, a in
            let sizes = ["/forged.png": fake.count, "/huge.png": Int.max]
            for (path, size) in sizes {
                origin.route(path, .ok(real, contentType: "image/png"))
                try Self.plantForgery(redis, url: origin.baseURL + path, body: fake, size: size)
            }
            for path in sizes.keys.sorted() {
                // Twice: the second read comes from A's own caches, which must hold the origin's bytes.
                #expect(SharedTierTests.outcome(a.path(origin.baseURL + path), real) == "same bytes", "\(path)")
                #expect(SharedTierTests.outcome(a.path(origin.baseURL + path), real) == "same bytes", "\(path)")
                #expect(origin.requestCount(path) == 1, "\(path)")
            }
            #expect(a.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 2 })
            #expect((a.statistics()["repository.shared_tier.rejected"] ?? 0) >= 2)
            let refusals = a.log.split(separator: "\n").filter { $0.contains("ignored the stored value") }
            #expect(refusals.count == 2, "once per forged record: \(refusals)")
            #expect(!a.log.contains("trusted as they are"), "a mount with a key file says nothing of the kind")
            // B reads what A published, sealed with the fleet key: no origin GET.
            let b = try SharedTierTests.member(redis, keyed)
            defer { b.stop() }
            for path in sizes.keys.sorted() {
                #expect(SharedTierTests.outcome(b.path(origin.baseURL + path), real) == "same bytes", "\(path)")
                #expect(origin.requestCount(path) == 1, "\(path): fetched once fleet-wide")
            }
            #expect(b.waitForStatistics { $0["repository.shared_tier.hits"] == 2 }, "\(b.statistics())")
            #expect(b.statistics()["repository.shared_tier.rejected"] ?? 0 == 0)
        }
    }

    @Test("the fleet key file: a mount without one says Redis is trusted as it is; one open to others is refused")
    func keyFileChecks() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let keyless = try SharedTierTests.member(redis)
        defer { keyless.stop() }
        #expect(keyless.waitForLog { $0.contains("no --shared-cache-key-file, so its values are trusted as they are") })
        let scratch = try Scratch()
        for (name, text, mode, reason) in [
            ("open.key", "a key long enough to be one\n", 0o644, "chmod 600"),
            ("short.key", "short\n", 0o600, "at least 16"),
            ("empty.key", "\n", 0o600, "at least 16")
        ] {
            let file = try scratch.write(name, text, mode: mode)
            let result = try ChildProcess.run(
                MountedImgfs.binary,
                [
                    "mount", "\(scratch.path)/nowhere", "--foreground", "--shared-cache", redis.address,
                    "--shared-cache-key-file", file
                ],
                timeout: 20)
            #expect(result.status != 0 && result.output.contains(reason), "\(name): \(result.output)")
        }
    }

    @Test("an image fetched with credentials reaches only mounts sending the same ones (Redis, shared cache dir)")
    func credentialsStayApart() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let scratch = try Scratch()
        let key = try scratch.write("fleet.key", "fleet-key-\(UUID().uuidString)\n")
        let cache = CachingIntegrationTests.SharedCache()
        let icon = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin()
        defer { origin.stop() }
        // The origin gives the image only to requests with the token.
        origin.route(prefix: "/private") { request in
            request.header("Authorization") == "Bearer s3cret"
                ? .ok(icon, contentType: "image/png") : OriginResponse(status: 403)
        }
        let url = origin.baseURL + "/private.png"
        let keyed = ["--shared-cache-key-file", key]
        let token = ["--header", "Authorization: Bearer s3cret"]
        // F, with the token, fetches it and publishes it.
        let f = try SharedTierTests.member(redis, keyed + token, cacheDirectory: cache.path)
        #expect(SharedTierTests.outcome(f.path(url), icon) == "same bytes")
        #expect(f.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 1 })
        #expect(f.waitForStatistics { $0["repository.disk_entries"] == 1 })
        f.stop()
        // G, without the token, on F's cache directory, and O, with another token: neither F's disk entry nor Redis
        // gives them the image; the origin refuses them.
        for (name, arguments, directory) in [
            ("G", keyed, cache.path as String?), ("O", keyed + ["--header", "Authorization: Bearer other"], nil)
        ] {
            let mount = try SharedTierTests.member(redis, arguments, cacheDirectory: directory)
            defer { mount.stop() }
            #expect(SharedTierTests.outcome(mount.path(url), icon) == "\(Errno(EACCES))", "\(name)")
            #expect(mount.statistics()["repository.shared_tier.hits"] ?? 0 == 0, "\(name)")
            // imgfs why (which computes the key without the mount's credentials) still finds the reason.
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("403"), "\(name): \(why.output)")
        }
        // H, with the same token and a cache of its own, reads it from Redis: one GET with the token fleet-wide.
        let h = try SharedTierTests.member(redis, keyed + token)
        defer { h.stop() }
        #expect(SharedTierTests.outcome(h.path(url), icon) == "same bytes")
        // The counter follows the transfer's completion by a moment.
        #expect(h.waitForStatistics { $0["repository.shared_tier.hits"] == 1 }, "\(h.statistics())")
        let granted = origin.requests().filter { $0.header("Authorization") == "Bearer s3cret" }
        #expect(granted.count == 1, "\(granted.count) GETs with the token")
        #expect(origin.requestCount("/private.png") == 3, "F's, G's and O's")
        // The token appears in no key name.
        #expect(try redis.keys("*").allSatisfy { !$0.contains("s3cret") })
    }

    @Test("a URL fetched with a cookie file never goes through Redis: not published, not read")
    func cookieFileIsNotShared() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let scratch = try Scratch()
        let cookies = try scratch.write(
            "cookies.txt", "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\ts\t1\n")
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--cookie-file", cookies])) { origin, a in
            origin.route("/icon.png", .ok(icon, contentType: "image/png"))
            #expect(SharedTierTests.outcome(a.path(origin.baseURL + "/icon.png"), icon) == "same bytes")
            #expect(origin.requests().last?.header("Cookie") == "s=1", "the cookie was sent")
            let b = try SharedTierTests.member(redis, ["--cookie-file", cookies])
            defer { b.stop() }
            #expect(SharedTierTests.outcome(b.path(origin.baseURL + "/icon.png"), icon) == "same bytes")
            #expect(origin.requestCount("/icon.png") == 2, "each mount asked the origin")
            #expect(a.statistics()["repository.shared_tier.published"] ?? 0 == 0)
            #expect(try redis.keys("\(SharedTierKeys.namespace)*").isEmpty)
        }
    }
}
