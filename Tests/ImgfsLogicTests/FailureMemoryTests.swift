import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

/// Issue 37: failures of every kind are remembered for a while (transient ones for `--tune failure-memory`, 10 s by
/// default), so repeated stats of a failing URL cost one attempt; a cancelled transfer is not remembered.
@Suite("Failure memory")
struct FailureMemoryTests {
    let fetcher = ManualFetcher()
    let clock = TestClock()
    let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/broken.png")
    }

    private func repository(_ memory: FailureMemory = FailureMemory()) -> ImageRepository {
        .forTests(fetcher: fetcher, now: { [clock] in clock.now }, adjust: { $0.failureMemory = memory })
    }

    @Test("the defaults: 60 s for 404, 410 and unknown hosts, 10 s for everything else")
    func defaults() {
        #expect(FailureMemory() == FailureMemory(permanent: 60, transient: 10))
        #expect(FailureMemory(negativeTTL: 60, failureMemory: 10) == FailureMemory())
    }

    @Test("the mount's rule: at least 1 s each, and a transient failure never longer than a permanent one")
    func mountRule() {
        #expect(FailureMemory(negativeTTL: 0, failureMemory: 10) == FailureMemory(permanent: 1, transient: 1))
        #expect(FailureMemory(negativeTTL: 5, failureMemory: 10) == FailureMemory(permanent: 5, transient: 5))
        #expect(FailureMemory(negativeTTL: 60, failureMemory: 30) == FailureMemory(permanent: 60, transient: 30))
        #expect(FailureMemory(negativeTTL: 60, failureMemory: 0) == FailureMemory(permanent: 60, transient: 1))
    }

    @Test(
        "a transient failure (500, refused, timeout, not an image) is answered without a request until its memory ends",
        arguments: [
            FetchError.httpStatus(500), .unreachable("connection refused"), .timedOut("stalled"),
            .notAnImage("HTML")
        ])
    func transientFailure(_ error: FetchError) {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.fail(0, error)
        for _ in 0..<20 {
            #expect(repository.prepare(url) == .failure(error))
            clock.advance(0.45)
        }
        #expect(fetcher.transfers.count == 1, "20 uses within 9 s: one transfer")
        clock.advance(1.1)
        #expect(repository.prepare(url) == .success(nil), "after 10 s the next use tries again")
        #expect(fetcher.transfers.count == 2)
    }

    @Test("a 404 is remembered for the permanent memory, a transient failure for its own")
    func permanentAndTransient() throws {
        let repository = repository(FailureMemory(permanent: 60, transient: 3))
        let other = try ImageURL("http://127.0.0.1/gone.png")
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.fail(0, .httpStatus(503))
        fetcher.fail(1, .httpStatus(404))
        clock.advance(3.5)
        #expect(repository.prepare(other) == .failure(.httpStatus(404)))
        #expect(repository.prepare(url) == .success(nil))
        #expect(fetcher.transfers.count == 3)
    }

    @Test("a cancelled transfer is not remembered: the next use starts a new one")
    func cancelledIsNotRemembered() {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.fail(0, .cancelled)
        #expect(repository.prepare(url) == .success(nil))
        #expect(fetcher.transfers.count == 2)
    }

    @Test("rm of the file (evict) forgets the failure: the next use tries again at once")
    func evictForgets() {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.fail(0, .httpStatus(500))
        #expect(repository.prepare(url) == .failure(.httpStatus(500)))
        repository.evict(url)
        #expect(repository.prepare(url) == .success(nil))
        #expect(fetcher.transfers.count == 2)
    }

    @Test(
        "imgfs purge (any kind) forgets every remembered failure; imgfs why still has the reason",
        arguments: [
            CacheTiers.PurgeKind.memory, .disk, .expired
        ])
    func purgeForgets(_ kind: CacheTiers.PurgeKind) {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.fail(0, .httpStatus(404))
        #expect(repository.prepare(url) == .failure(.httpStatus(404)))
        repository.purge(kind)
        #expect(repository.lastError(forKey: url.cacheKey) == .httpStatus(404))
        #expect(repository.prepare(url) == .success(nil))
        #expect(fetcher.transfers.count == 2)
    }
}
