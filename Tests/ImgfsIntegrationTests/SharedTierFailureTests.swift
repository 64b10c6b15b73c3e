import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Testing

/// Issue 19: the shared tier when Redis fails or holds bad values, its TTLs, and the policies that hold across it.
@Suite(
    "Shared tier failures and policies", .serialized,
    .enabled(if: FuseAvailability.available && RedisServer.available))
struct SharedTierFailureTests {
    private func serve(_ images: [[UInt8]], on origin: TestOrigin, headers: [(String, String)] = []) -> [String] {
        images.enumerated().map { index, body in
            var response = OriginResponse.ok(body, contentType: "image/png")
            response.headers += headers
            origin.route("/i\(index).png", response)
            return "\(origin.baseURL)/i\(index).png"
        }
    }

    private func count(_ text: String, in log: String) -> Int {
        log.components(separatedBy: text).count - 1
    }

    @Test("Redis stopped mid-run and restarted: every read is correct, the log says so once (and its recovery)")
    func redisOutage() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(40)
        try withMountedOrigin(SharedTierTests.memberArguments(redis)) { origin, a in
            let urls = serve(images, on: origin)
            let b = try SharedTierTests.member(redis)
            defer { b.stop() }
            #expect(SharedTierTests.outcome(a.path(urls[0]), images[0]) == "same bytes")
            redis.stop()
            for index in 1...5 {
                #expect(SharedTierTests.outcome(a.path(urls[index]), images[index]) == "same bytes")
                #expect(SharedTierTests.outcome(b.path(urls[index]), images[index]) == "same bytes")
            }
            try redis.start()
            var next = 6
            let recovered = Poll.until(timeout: 20, interval: 0.2) {
                guard next < 30 else { return false }
                #expect(SharedTierTests.outcome(a.path(urls[next]), images[next]) == "same bytes")
                next += 1
                return a.waitForLog(timeout: 0.2) { $0.contains("shared cache answers again") }
            }
            #expect(recovered, "A never logged the recovery")
            // Back in use: what A fetches now, B reads from Redis.
            origin.resetCounters()
            #expect(SharedTierTests.outcome(a.path(urls[35]), images[35]) == "same bytes")
            #expect(a.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 2 })
            #expect(SharedTierTests.outcome(b.path(urls[35]), images[35]) == "same bytes")
            #expect(origin.requestCount("/i35.png") == 1)
            #expect(count("shared cache unusable", in: a.log) == 1, "\(a.log)")
            #expect(count("shared cache answers again", in: a.log) == 1)
            #expect(count("shared cache unusable", in: b.log) == 1)
            #expect((a.statistics()["repository.shared_tier.outages"] ?? 0) == 1)
        }
    }

    @Test("a Redis that stops answering (SIGSTOP) costs at most the timeout: reads go to the origin, logged once")
    func redisHangs() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(30)
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--tune", "shared-timeout=50ms"])) { origin, a in
            let urls = serve(images, on: origin)
            #expect(SharedTierTests.outcome(a.path(urls[0]), images[0]) == "same bytes")
            redis.signal(SIGSTOP)
            defer { redis.signal(SIGCONT) }
            for index in 1..<6 {
                let start = Date()
                #expect(SharedTierTests.outcome(a.path(urls[index]), images[index]) == "same bytes")
                #expect(
                    Date().timeIntervalSince(start) < 2, "a read waited \(Date().timeIntervalSince(start)) s for Redis")
            }
            #expect(count("shared cache unusable (no answer within the timeout)", in: a.log) == 1, "\(a.log)")
            redis.signal(SIGCONT)
            var next = 6
            let recovered = Poll.until(timeout: 20, interval: 0.2) {
                guard next < urls.count else { return false }
                #expect(SharedTierTests.outcome(a.path(urls[next]), images[next]) == "same bytes")
                next += 1
                return a.waitForLog(timeout: 0.2) { $0.contains("shared cache answers again") }
            }
            #expect(recovered)
            #expect((a.statistics()["repository.shared_tier.errors"] ?? 0) >= 1)
        }
    }

    @Test("a full Redis (maxmemory, noeviction) refuses writes: reads stay correct, logged once, and its recovery")
    func redisFull() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(30)
        try withMountedOrigin(SharedTierTests.memberArguments(redis)) { origin, a in
            let urls = serve(images, on: origin)
            try redis.cli("CONFIG", "SET", "maxmemory-policy", "noeviction")
            try redis.cli("CONFIG", "SET", "maxmemory", "1")
            for index in 0..<4 {
                #expect(SharedTierTests.outcome(a.path(urls[index]), images[index]) == "same bytes")
            }
            #expect(count("shared cache refuses writes", in: a.log) == 1, "\(a.log)")
            #expect(count("shared cache unusable", in: a.log) == 0, "a full Redis is still read")
            try redis.cli("CONFIG", "SET", "maxmemory", "0")
            var next = 4
            let recovered = Poll.until(timeout: 20) {
                guard next < urls.count else { return false }
                #expect(SharedTierTests.outcome(a.path(urls[next]), images[next]) == "same bytes")
                next += 1
                return a.log.contains("shared cache accepts writes again")
            }
            #expect(recovered)
            #expect(count("shared cache refuses writes", in: a.log) == 1)
            let last = next - 1
            #expect(a.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 1 })
            let b = try SharedTierTests.member(redis)
            defer { b.stop() }
            #expect(SharedTierTests.outcome(b.path(urls[last]), images[last]) == "same bytes")
            #expect(origin.requestCount("/i\(last).png") == 1)
        }
    }

    @Test("a corrupt or foreign value planted in Redis is ignored, refetched and overwritten")
    func corruptValues() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(2)
        try withMountedOrigin(SharedTierTests.memberArguments(redis)) { origin, a in
            let urls = serve(images, on: origin)
            #expect(SharedTierTests.outcome(a.path(urls[0]), images[0]) == "same bytes")
            #expect(a.waitForStatistics { $0["repository.shared_tier.published"] == 1 })
            let keys0 = SharedTierKeys(url: try ImageURL(urls[0]))
            let pieces = try redis.keys("\(SharedTierKeys.namespace)piece:\(keys0.hash):*")
            #expect(pieces.count == 1)
            for piece in pieces { try redis.cli("SET", piece, "IMP2 not the bytes that were stored") }
            // A foreign value where URL 1's record belongs.
            let keys1 = SharedTierKeys(url: try ImageURL(urls[1]))
            try redis.cli("SET", keys1.meta, #"{"version":2,"url":"http://elsewhere/x.png","fetch":"f","pieceSize":1}"#)
            let b = try SharedTierTests.member(redis)
            defer { b.stop() }
            for (index, url) in urls.enumerated() {
                #expect(SharedTierTests.outcome(b.path(url), images[index]) == "same bytes")
            }
            #expect(origin.requestCount("/i0.png") == 2 && origin.requestCount("/i1.png") == 1)
            #expect((b.statistics()["repository.shared_tier.rejected"] ?? 0) >= 2)
            #expect(b.waitForStatistics { $0["repository.shared_tier.published"] == 2 })
            #expect(try redis.cli("GET", keys1.meta).contains(urls[1]), "the foreign record was not overwritten")
            // Overwritten with good values: a third mount reads both from Redis.
            let c = try SharedTierTests.member(redis)
            defer { c.stop() }
            for (index, url) in urls.enumerated() {
                #expect(SharedTierTests.outcome(c.path(url), images[index]) == "same bytes")
            }
            #expect(origin.requestCount("/i0.png") == 2 && origin.requestCount("/i1.png") == 1)
        }
    }

    @Test("the TTL in Redis matches the expiry (--expire, and max-age with --cache-control)")
    func ttlMatchesExpiry() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(2)
        var response = OriginResponse.ok(images[1], contentType: "image/png")
        response.headers.append(("Cache-Control", "max-age=120"))
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--expire", "1h"])) { origin, a in
            let plain = serve([images[0]], on: origin)[0]
            origin.route("/aged.png", response)
            #expect(SharedTierTests.outcome(a.path(plain), images[0]) == "same bytes")
            #expect(a.waitForStatistics { $0["repository.shared_tier.published"] == 1 })
            let ttl = Int(try redis.cli("PTTL", SharedTierKeys(url: try ImageURL(plain)).meta)) ?? -1
            #expect(ttl > 3_600_000 - 60_000 && ttl <= 3_600_000, "PTTL \(ttl)")
            let b = try SharedTierTests.member(redis, ["--cache-control"])
            defer { b.stop() }
            let aged = origin.baseURL + "/aged.png"
            #expect(SharedTierTests.outcome(b.path(aged), images[1]) == "same bytes")
            #expect(b.waitForStatistics { $0["repository.shared_tier.published"] == 1 })
            let agedTTL = Int(try redis.cli("PTTL", SharedTierKeys(url: try ImageURL(aged)).meta)) ?? -1
            #expect(agedTTL > 60_000 && agedTTL <= 120_000, "PTTL \(agedTTL)")
        }
    }

    @Test("a password-protected Redis: the password from the address or a file, options in fstab form")
    func password() throws {
        let redis = try RedisServer(password: "fleet-secret")
        defer { redis.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin(["--shared-cache", "redis://:fleet-secret@127.0.0.1:\(redis.port)/3"]) { origin, a in
            let url = serve([image], on: origin)[0]
            #expect(SharedTierTests.outcome(a.path(url), image) == "same bytes")
            #expect(a.waitForStatistics { $0["repository.shared_tier.published"] == 1 })
            let file = "/tmp/imgfs-redis-pw-\(getpid())"
            try "fleet-secret\n".write(toFile: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let fstab = "shared_cache=redis://127.0.0.1:\(redis.port)/3,shared_cache_password_file=\(file)"
            let b = try MountedImgfs(arguments: ["-o", fstab])
            defer { b.stop() }
            #expect(SharedTierTests.outcome(b.path(url), image) == "same bytes")
            #expect(origin.requestCount("/i0.png") == 1, "B did not read A's copy from Redis database 3")
            #expect(!a.log.contains("fleet-secret") && !b.log.contains("fleet-secret"), "the password was logged")
            // A wrong password is a Redis that cannot be used: the origin, as always.
            let c = try MountedImgfs(arguments: ["--shared-cache", "redis://:wrong@127.0.0.1:\(redis.port)/3"])
            defer { c.stop() }
            #expect(SharedTierTests.outcome(c.path(url), image) == "same bytes")
            #expect(origin.requestCount("/i0.png") == 2)
        }
    }

    @Test("policies: no-store is never shared, --allow-host applies first, cache-only reads Redis but not the origin")
    func policies() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let images = try Fixtures.smallPNGs(3)
        var noStore = OriginResponse.ok(images[2], contentType: "image/png")
        noStore.headers.append(("Cache-Control", "no-store"))
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--cache-control"])) { origin, a in
            let urls = serve(Array(images[0..<2]), on: origin)
            let privateURL = origin.baseURL + "/private.png"
            origin.route("/private.png", noStore)
            #expect(SharedTierTests.outcome(a.path(urls[0]), images[0]) == "same bytes")
            #expect(SharedTierTests.outcome(a.path(privateURL), images[2]) == "same bytes")
            #expect(a.waitForStatistics { $0["repository.shared_tier.published"] == 1 })
            let privateKeys = SharedTierKeys(url: try ImageURL(privateURL))
            #expect(try redis.keys("\(SharedTierKeys.namespace)meta:\(privateKeys.hash)").isEmpty)
            let b = try SharedTierTests.member(redis, ["--cache-control"])
            defer { b.stop() }
            #expect(SharedTierTests.outcome(b.path(privateURL), images[2]) == "same bytes")
            #expect(origin.requestCount("/private.png") == 2, "a no-store body was shared")
            // --allow-host: refused before Redis is asked, although Redis has the image.
            let fenced = try SharedTierTests.member(redis, ["--allow-host", "images.example.com"])
            defer { fenced.stop() }
            #expect(PosixFile.read(fenced.path(urls[0])) == .failure(Errno(EACCES)))
            #expect(fenced.statistics()["repository.shared_tier.hits"] == 0)
            // cache-only: Redis yes, the origin never.
            let offline = try SharedTierTests.member(redis, ["--policy", "cache-only"])
            defer { offline.stop() }
            #expect(SharedTierTests.outcome(offline.path(urls[0]), images[0]) == "same bytes")
            #expect(PosixFile.read(offline.path(urls[1])) == .failure(Errno(ENOENT)))
            #expect(origin.requestCount("/i0.png") == 1 && origin.requestCount("/i1.png") == 0)
        }
    }
}
