import Foundation
import ImgfsCurl
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Logging
import Testing

/// The libcurl fetcher alone, against the test origin on 127.0.0.1: no FUSE, no caches.
@Suite("Curl fetcher", .serialized)
struct CurlFetcherTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 4096)

    static func fetcher(_ adjust: (inout FetcherConfiguration) -> Void = { _ in }) -> CurlFetcher {
        var configuration = FetcherConfiguration()
        configuration.retryBaseDelay = 0.01
        configuration.fetchThreads = 3  // every test here runs with transfers spread over threads
        adjust(&configuration)
        return CurlFetcher(configuration: configuration, logger: Logger(label: "test"))
    }

    static func fetch(_ fetcher: CurlFetcher, _ url: String) throws -> RecordingObserver {
        let observer = RecordingObserver()
        _ = fetcher.start(FetchRequest(url: try ImageURL(url)), observer: observer)
        return observer
    }

    @Test("5xx answers are retried until one succeeds; the observer sees one head and the body once")
    func retriesServerErrors() throws {
        let origin = try TestOrigin()
        let attempts = Locked(0)
        origin.route(prefix: "/flaky") { _ in
            attempts.withLock {
                $0 += 1; return $0
            } <= 2 ? .status(503) : .ok(Self.png, contentType: "image/png")
        }
        let fetcher = Self.fetcher()
        defer { fetcher.shutdown() }
        let observer = try Self.fetch(fetcher, "\(origin.baseURL)/flaky.png")
        #expect(observer.waitForCompletion() == nil)
        #expect(origin.requestCount("/flaky.png") == 3)
        #expect(observer.body == Self.png)
        #expect(observer.events.withLock { $0.heads.count } == 1)
    }

    @Test("with retries 0 a 503 fails at once, after one request")
    func noRetries() throws {
        let origin = try TestOrigin()
        origin.route("/down.png", .status(503))
        let fetcher = Self.fetcher { $0.retries = 0 }
        defer { fetcher.shutdown() }
        let observer = try Self.fetch(fetcher, "\(origin.baseURL)/down.png")
        #expect(observer.waitForCompletion() == .httpStatus(503))
        #expect(origin.requestCount("/down.png") == 1)
        #expect(observer.body.isEmpty)
    }

    @Test("a 429 with Retry-After: 1 is retried no sooner than a second later")
    func honoursRetryAfter() throws {
        let origin = try TestOrigin()
        let times = Locked<[ContinuousClock.Instant]>([])
        origin.route(prefix: "/busy") { _ in
            let count = times.withLock {
                $0.append(.now); return $0.count
            }
            return count == 1
                ? OriginResponse(status: 429, headers: [("Retry-After", "1")])
                : .ok(Self.png, contentType: "image/png")
        }
        let fetcher = Self.fetcher()
        defer { fetcher.shutdown() }
        let observer = try Self.fetch(fetcher, "\(origin.baseURL)/busy.png")
        #expect(observer.waitForCompletion() == nil)
        let seen = times.withLock { $0 }
        try #require(seen.count == 2)
        #expect(seen[1] - seen[0] >= .milliseconds(950))
    }

    @Test("at most max-transfers-per-host run at once on a host, and a second host is not held back by its queue")
    func perHostAdmission() throws {
        let slow = try TestOrigin()
        let other = try TestOrigin()
        let running = Locked((now: 0, most: 0))
        slow.route(prefix: "/slow") { _ in
            running.withLock {
                $0.now += 1; $0.most = max($0.most, $0.now)
            }
            Poll.elapse(0.3)  // an origin that takes its time: what admission is about
            running.withLock { $0.now -= 1 }
            return .ok(Self.png, contentType: "image/png")
        }
        other.route("/fast.png", .ok(Self.png, contentType: "image/png"))
        let fetcher = Self.fetcher { $0.maxTransfersPerHost = 2 }
        defer { fetcher.shutdown() }
        let observers = try (0..<6).map { try Self.fetch(fetcher, "\(slow.baseURL)/slow\($0).png") }
        let start = ContinuousClock.now
        let fast = try Self.fetch(fetcher, "\(other.baseURL)/fast.png")
        #expect(fast.waitForCompletion() == nil)
        // Six transfers two at a time take three rounds of 0.3 s; the other host's answer came within the first.
        #expect(ContinuousClock.now - start < .milliseconds(600))
        for observer in observers { #expect(observer.waitForCompletion() == nil) }
        #expect(running.withLock { $0.most } == 2)
    }

    @Test("with private networks denied, loopback is refused before anything is sent, by address and by name")
    func refusesPrivateAddresses() throws {
        let origin = try TestOrigin()
        origin.route("/inside.png", .ok(Self.png, contentType: "image/png"))
        let fetcher = Self.fetcher { $0.addressPolicy = AddressPolicy(denyPrivateNetworks: true) }
        defer { fetcher.shutdown() }
        for host in ["127.0.0.1", "localhost"] {
            let observer = try Self.fetch(fetcher, "http://\(host):\(origin.port)/inside.png")
            let error = observer.waitForCompletion()
            guard case .refused? = error else {
                Issue.record("expected a refusal for \(host), got \(String(describing: error))")
                continue
            }
        }
        #expect(origin.requestCount("/inside.png") == 0)
    }

    @Test("a cancelled transfer completes as cancelled at once, exactly once, and is not tried again")
    func cancellation() throws {
        let origin = try TestOrigin()
        origin.route("/hang.png", OriginResponse(body: Self.png, headerDelay: 10))
        let fetcher = Self.fetcher()
        defer { fetcher.shutdown() }
        let observer = RecordingObserver()
        let handle = fetcher.start(FetchRequest(url: try ImageURL("\(origin.baseURL)/hang.png")), observer: observer)
        Poll.until(timeout: 5) { origin.requestCount("/hang.png") > 0 }
        try #require(origin.requestCount("/hang.png") == 1)
        let cancelled = ContinuousClock.now
        handle.cancel()
        #expect(observer.waitForCompletion(seconds: 2) == .cancelled)
        #expect(ContinuousClock.now - cancelled < .seconds(1))
        // Longer than the retry delays (10 ms base): a retry would have shown up by now.
        Poll.elapse(0.3)
        #expect(origin.requestCount("/hang.png") == 1)
        #expect(observer.completionCount == 1)
    }
}
