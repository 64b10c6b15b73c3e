import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Synchronization
import Testing

/// A maker whose decodes cost what the original's first byte says (in units of 100 KiB) and take 50 ms; it records
/// how many ran at once at most.
final class CostlyMaker: VariantMaking, @unchecked Sendable {
    let running = Mutex((now: 0, most: 0, calls: 0))

    func decodeCost(of original: UnsafeRawBufferPointer) -> DecodeCost? {
        DecodeCost(bytes: Int(original.first ?? 0) * 100 << 10, width: 100, height: 100, what: "interlaced PNG")
    }

    func makeVariant(
        of original: UnsafeRawBufferPointer, _ specification: VariantSpecification
    )
        -> Result<MadeVariant, VariantError>
    {
        running.withLock {
            $0.now += 1
            $0.most = max($0.most, $0.now)
            $0.calls += 1
        }
        Thread.sleep(forTimeInterval: 0.05)
        running.withLock { $0.now -= 1 }
        return .success(MadeVariant(bytes: [1, 2, 3], format: .jpeg, width: 1, height: 1))
    }
}

@Suite("Decode budget")
struct DecodeBudgetTests {
    let fetcher = ManualFetcher()

    /// A store whose images' memory budget (and so its decode budget) is 1 MiB, with 2 workers.
    func store(_ maker: CostlyMaker) -> VariantStore {
        .forTests(fetcher: fetcher, maker: maker)
    }

    @Test("admitted while the sum fits, refused over the limit, parked otherwise and retried when one ends")
    func budget() {
        let budget = DecodeBudget()
        let retried = Mutex(0)
        #expect(budget.admit(0, limit: 10, retry: {}) == .admitted)
        #expect(budget.admit(11, limit: 10, retry: {}) == .refused)
        #expect(budget.admit(6, limit: 10, retry: {}) == .admitted)
        #expect(budget.admit(6, limit: 10, retry: { retried.withLock { $0 += 1 } }) == .parked)
        #expect(budget.admit(4, limit: 10, retry: {}) == .admitted)
        #expect(budget.inUse == 10 && budget.parkedCount == 1)
        budget.release(4)
        #expect(retried.withLock { $0 } == 1 && budget.parkedCount == 0 && budget.inUse == 6)
    }

    @Test("a decode over the memory budget fails with EFBIG and its reason; two that fit alone never run at once")
    func admission() throws {
        let maker = CostlyMaker()
        let store = store(maker)
        #expect(store.decodeLimit == 1 << 20)
        let urls = try (0..<3).map { try ImageURL("http://127.0.0.1/\($0).png") }
        let replies = Replies<(Int, Result<VariantStore.Variant, VariantError>)>()
        for (index, url) in urls.enumerated() {
            store.variant(256, of: url, refresh: true) { replies.record((index, $0)) }
        }
        #expect(fetcher.transfers.count == 3)
        fetcher.respond(0, body: [11, 0])  // 1.1 MiB: never fits
        fetcher.respond(1, body: [6, 0])  // 600 KiB each: one at a time
        fetcher.respond(2, body: [6, 1])
        Poll.until(timeout: 5, interval: 0.005) { replies.all.count >= 3 }
        let results = Dictionary(uniqueKeysWithValues: replies.all)
        guard case .failure(let error)? = results[0] else {
            Issue.record("no failure: \(results)")
            return
        }
        #expect(error.filesystemError == .fileTooLarge && error.reason == "decode_memory")
        #expect(
            error.description.hasPrefix(
                "decode refused: interlaced PNG of 100 x 100 pixels needs 1.1 MiB to decode, over the decode budget of"
                    + " 1.0 MiB"), "\(error)")
        #expect((try? results[1]?.get()) != nil && (try? results[2]?.get()) != nil)
        #expect(maker.running.withLock { $0.most } == 1, "never two decodes of 600 KiB under 1 MiB")
        #expect(maker.running.withLock { $0.calls } == 2, "the one over budget was not decoded")
        #expect(store.statistics().failures["decode_memory"] == 1)
    }
}
