import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 19 through real mounts: two (or more) mounts with separate cache directories stand for machines of a fleet
/// sharing one real `redis-server`; the origin counts its GETs.
@Suite("Shared tier", .serialized, .enabled(if: FuseAvailability.available && RedisServer.available))
struct SharedTierTests {
    /// A mount of the fleet: its own cache directory, the shared Redis. Redis gets a 1 s budget per command rather
    /// than the default 50 ms: the machine that runs the tests is shared with builds, and a 1 MiB SET that waits for a
    /// CPU longer than 50 ms would send a transfer to the origin, which is right but not what these tests look at
    /// (the timeout has its own test, which passes `--tune shared-timeout=50ms`; the last value given wins).
    static func member(
        _ redis: RedisServer, _ arguments: [String] = [], cacheDirectory: String? = nil
    ) throws -> MountedImgfs {
        try MountedImgfs(arguments: memberArguments(redis, arguments), cacheDirectory: cacheDirectory)
    }

    /// The arguments of ``member(_:_:)``, for a member mounted by `withMountedOrigin`.
    static func memberArguments(_ redis: RedisServer, _ arguments: [String] = []) -> [String] {
        ["--shared-cache", redis.address, "--tune", "shared-timeout=1s"] + arguments
    }

    /// A real JPEG padded to `size` bytes (still starts like a JPEG).
    static func largeImage(_ size: Int) throws -> [UInt8] {
        var body = try Fixtures.largeJPEG()
        var state: UInt32 = 12345
        while body.count < size {
            state = state &* 1_103_515_245 &+ 12345
            body.append(UInt8(truncatingIfNeeded: state >> 16))
        }
        return Array(body.prefix(size))
    }

    /// "same bytes" when reading `path` gives `body`, else what it gave (short, for test output).
    static func outcome(_ path: String, _ body: [UInt8]) -> String {
        describe(PosixFile.read(path), body)
    }

    static func describe(_ result: Result<[UInt8], Errno>?, _ body: [UInt8]) -> String {
        switch result {
        case .success(let bytes)?: bytes == body ? "same bytes" : "\(bytes.count) other bytes"
        case .failure(let error)?: "\(error)"
        case nil: "no answer"
        }
    }

    @Test("mount B's cold read of a URL mount A fetched makes no origin GET and gives the same bytes")
    func secondMountReadsTheSharedTier() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let small = try Fixtures.smallPNGs(1)[0]
        let large = try Fixtures.largeJPEG()
        try withMountedOrigin(SharedTierTests.memberArguments(redis)) { origin, a in
            origin.route("/icon.png", .ok(small, contentType: "image/png"))
            origin.route("/large.jpg", .ok(large, contentType: "image/jpeg"))
            let b = try Self.member(redis)
            defer { b.stop() }
            for (path, body) in [("/icon.png", small), ("/large.jpg", large)] {
                #expect(SharedTierTests.outcome(a.path(origin.baseURL + path), body) == "same bytes")
                let published = path == "/icon.png" ? 1.0 : 2.0
                #expect(a.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= published })
                #expect(SharedTierTests.outcome(b.path(origin.baseURL + path), body) == "same bytes")
                #expect(origin.requestCount(path) == 1, "B's cold read made \(origin.requestCount(path)) origin GETs")
            }
            #expect(b.statistics()["repository.shared_tier.hits"] == 2)
            // B keeps it in its own tiers: a third read is served by B alone, even with Redis gone.
            redis.stop()
            #expect(SharedTierTests.outcome(b.path(origin.baseURL + "/large.jpg"), large) == "same bytes")
            #expect(origin.requestCount("/large.jpg") == 1)
        }
    }

    @Test("2 mounts x 16 readers of one cold URL make 1 origin GET")
    func oneFetchFleetWide() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let origin = try TestOrigin()
        defer { origin.stop() }
        let body = try Fixtures.mediumJPEG()
        var response = OriginResponse.ok(body, contentType: "image/jpeg")
        response.headerDelay = 0.5
        origin.route("/one.jpg", response)
        let mounts = [try Self.member(redis), try Self.member(redis)]
        defer { mounts.forEach { $0.stop() } }
        let url = origin.baseURL + "/one.jpg"
        let results = ParallelThreads.run(32) { index in PosixFile.read(mounts[index % 2].path(url)) }
        #expect(results.allSatisfy { $0 == .success(body) })
        #expect(origin.requestCount("/one.jpg") == 1, "\(origin.requestCount("/one.jpg")) origin GETs")
    }

    @Test("a 40 MB image is streamed to mount B while mount A still downloads it")
    func streamsWhileDownloading() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let body = try Self.largeImage(40 << 20)
        var response = OriginResponse.ok(body, contentType: "image/jpeg")
        response.bytesPerSecond = 8 << 20
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--tune", "shared-max-size=64M"])) { origin, a in
            origin.route("/big.jpg", response)
            let b = try Self.member(redis, ["--tune", "shared-max-size=64M"])
            defer { b.stop() }
            let url = origin.baseURL + "/big.jpg"
            let readA = Thread.detachedRead(a.path(url))
            #expect(Poll.until(timeout: 20) { origin.bodyBytesSent("/big.jpg") >= 4 << 20 })
            let prefix = try #require(PosixFile.readPrefix(b.path(url), count: 2 << 20))
            let sentWhenBHadIt = origin.bodyBytesSent("/big.jpg")
            #expect(prefix.bytes == Array(body.prefix(2 << 20)))
            #expect(sentWhenBHadIt < body.count, "B got its first bytes only after A's download ended")
            #expect(SharedTierTests.outcome(b.path(url), body) == "same bytes")
            #expect(SharedTierTests.describe(readA.result(timeout: 60), body) == "same bytes")
            #expect(origin.requestCount("/big.jpg") == 1)
            // B followed A's fetch (twice when the prefix read's close called its first transfer off).
            #expect((b.statistics()["repository.shared_tier.followed"] ?? 0) >= 1)
        }
    }

    @Test("kill -9 of mount A mid-fetch: B completes within lease + fetch time with at most 1 extra GET")
    func leaseHolderDies() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let body = try Self.largeImage(16 << 20)
        var response = OriginResponse.ok(body, contentType: "image/jpeg")
        response.bytesPerSecond = 4 << 20
        let lease = 1.0
        try withMountedOrigin(SharedTierTests.memberArguments(redis, ["--tune", "shared-lease=1s"])) { origin, a in
            origin.route("/big.jpg", response)
            let b = try Self.member(redis, ["--tune", "shared-lease=1s"])
            defer { b.stop() }
            let url = origin.baseURL + "/big.jpg"
            let readA = Thread.detachedRead(a.path(url))
            #expect(Poll.until(timeout: 20) { origin.bodyBytesSent("/big.jpg") >= 3 << 20 })
            let start = Date()
            let readB = Thread.detachedRead(b.path(url))
            #expect(Poll.until(timeout: 20) { (b.statistics()["repository.shared_tier.followed"] ?? 0) >= 1 })
            #expect(Poll.until(timeout: 20) { (b.statistics()["repository.in_flight"] ?? 0) >= 1 })
            a.process.kill9AndReap()
            let fetchTime = Double(body.count) / Double(4 << 20)
            let resultB = readB.result(timeout: 60)
            let elapsed = Date().timeIntervalSince(start)
            #expect(SharedTierTests.describe(resultB, body) == "same bytes")
            #expect(elapsed < lease + fetchTime + 5, "B took \(elapsed) s")
            #expect(origin.requestCount("/big.jpg") <= 2, "\(origin.requestCount("/big.jpg")) origin GETs")
            _ = readA.result(timeout: 10)
        }
    }
}

/// A read of a whole file on a thread of its own, for reads that overlap.
final class DetachedRead: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let box = Locked<Result<[UInt8], Errno>?>(nil)

    init(_ path: String) {
        let thread = Thread { [self] in
            box.withLock { $0 = PosixFile.read(path) }
            done.signal()
        }
        thread.start()
    }

    /// The outcome, waiting up to `timeout` seconds (nil if the read has not ended).
    func result(timeout: Double) -> Result<[UInt8], Errno>? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return box.withLock { $0 }
    }
}

extension Thread {
    /// Starts reading `path` on a new thread.
    static func detachedRead(_ path: String) -> DetachedRead { DetachedRead(path) }
}
