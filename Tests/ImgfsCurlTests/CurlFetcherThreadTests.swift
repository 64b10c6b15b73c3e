import Foundation
import ImgfsCurl
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Logging
import Testing

/// The fetcher's limits and completions with transfers spread over several threads.
@Suite("Curl fetcher threads", .serialized)
struct CurlFetcherThreadTests {
    /// A route that holds each request for `seconds` and records how many it held at once.
    static func slowRoute(
        _ origin: TestOrigin, prefix: String, seconds: Double, running: Locked<(now: Int, most: Int)>
    ) {
        origin.route(prefix: prefix) { _ in
            running.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            Thread.sleep(forTimeInterval: seconds)  // an origin that takes its time: what admission is about
            running.withLock { $0.now -= 1 }
            return .ok(CurlFetcherTests.png, contentType: "image/png")
        }
    }

    @Test("with 2 threads and 2 per host, 10 slow transfers never run more than 2 at once, and use both threads")
    func perHostLimitAcrossThreads() throws {
        let origin = try TestOrigin()
        let running = Locked((now: 0, most: 0))
        Self.slowRoute(origin, prefix: "/slow", seconds: 0.2, running: running)
        let fetcher = CurlFetcherTests.fetcher {
            $0.fetchThreads = 2
            $0.maxTransfersPerHost = 2
        }
        defer { fetcher.shutdown() }
        let observers = try (0..<10).map { try CurlFetcherTests.fetch(fetcher, "\(origin.baseURL)/slow\($0).png") }
        for observer in observers { #expect(observer.waitForCompletion() == nil) }
        #expect(running.withLock { $0.most } == 2)
        let threads = Set(observers.flatMap { $0.events.withLock { $0.threads } })
        #expect(threads == ["imgfs-curl-0", "imgfs-curl-1"], "transfers ran on \(threads)")
    }

    @Test("max-transfers holds over all threads and hosts: 3 threads, 3 hosts, at most 3 transfers at once")
    func globalLimitAcrossThreads() throws {
        let origins = try (0..<3).map { _ in try TestOrigin() }
        let running = Locked((now: 0, most: 0))
        for origin in origins { Self.slowRoute(origin, prefix: "/slow", seconds: 0.15, running: running) }
        let fetcher = CurlFetcherTests.fetcher {
            $0.fetchThreads = 3
            $0.maxTransfers = 3
        }
        defer { fetcher.shutdown() }
        let observers = try (0..<12).map {
            try CurlFetcherTests.fetch(fetcher, "\(origins[$0 % 3].baseURL)/slow\($0).png")
        }
        for observer in observers { #expect(observer.waitForCompletion() == nil) }
        #expect(running.withLock { $0.most } == 3)
    }

    @Test("shutdown completes every transfer exactly once, running, waiting or between retries, on every thread")
    func shutdownCompletesEverything() throws {
        let origin = try TestOrigin()
        let failing = try TestOrigin()
        origin.route(prefix: "/hang") { _ in OriginResponse(body: CurlFetcherTests.png, headerDelay: 10) }
        failing.route("/down.png", .status(503))
        let fetcher = CurlFetcherTests.fetcher {
            $0.fetchThreads = 3
            $0.maxTransfersPerHost = 4
            $0.retryBaseDelay = 5
        }
        let hanging = try (0..<8).map { try CurlFetcherTests.fetch(fetcher, "\(origin.baseURL)/hang.png?\($0)") }
        let retrying = try CurlFetcherTests.fetch(fetcher, "\(failing.baseURL)/down.png")
        // Four hanging transfers run (the per-host limit), spread over the threads; four wait; one waits to retry.
        Poll.until(timeout: 5) { failing.requestCount("/down.png") == 1 && origin.totalRequests == 4 }
        #expect(origin.totalRequests == 4)
        #expect(failing.requestCount("/down.png") == 1)
        fetcher.shutdown()
        for observer in hanging + [retrying] {
            #expect(observer.waitForCompletion(seconds: 5) == .shutDown)
            #expect(observer.completionCount == 1)
        }
        let late = try CurlFetcherTests.fetch(fetcher, "\(origin.baseURL)/hang-late.png")
        #expect(late.waitForCompletion(seconds: 2) == .shutDown)
    }

    @Test("a transfer cancelled while it waits for admission completes as cancelled, on a fetch thread, never sent")
    func cancelWhileWaiting() throws {
        let origin = try TestOrigin()
        origin.route(prefix: "/hang") { _ in OriginResponse(body: CurlFetcherTests.png, headerDelay: 10) }
        let fetcher = CurlFetcherTests.fetcher { $0.maxTransfersPerHost = 1 }
        defer { fetcher.shutdown() }
        let running = try CurlFetcherTests.fetch(fetcher, "\(origin.baseURL)/hang-first.png")
        let waiting = RecordingObserver()
        let handle = fetcher.start(
            FetchRequest(url: try ImageURL("\(origin.baseURL)/hang-second.png")), observer: waiting)
        Poll.until(timeout: 5) { origin.requestCount("/hang-first.png") == 1 }
        handle.cancel()
        #expect(waiting.waitForCompletion(seconds: 2) == .cancelled)
        #expect(waiting.completionCount == 1)
        let thread = waiting.events.withLock { $0.completionThreads.first ?? "" }
        #expect(thread.hasPrefix("imgfs-curl-"), "completed on \(thread), not inside cancel()")
        #expect(origin.requestCount("/hang-second.png") == 0)
        #expect(running.completionCount == 0, "the running one goes on")
    }
}
