import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

/// Issue 14, item 7: a body that left the memory cache while its disk write waits in the queue is still found there
/// (the queue is a tier until the write lands), so it is not fetched twice.
@Suite("Image repository: queued disk writes are a tier")
struct QueuedWriteTierTests {
    let fetcher = ManualFetcher()
    let disk = FakeDisk()
    let first: ImageURL
    let second: ImageURL

    init() throws {
        first = try ImageURL("http://127.0.0.1/first.png")
        second = try ImageURL("http://127.0.0.1/second.png")
    }

    /// A memory cache with room for one 4-byte body, and disk writes that wait up to 2 s (large bodies wait for quiet).
    func repository() -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWrites.yieldSize = 2
        configuration.diskWrites.quietPeriod = 2
        configuration.diskWrites.maxDelay = 2
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 6), disk: disk,
            configuration: configuration, logger: .init(label: "test"))
    }

    @Test("evicted from memory before its write landed: served from the queue, one transfer per URL")
    func evictedWhileQueued() {
        let repository = repository()
        _ = repository.prepare(first)
        fetcher.respond(0, body: [1, 2, 3, 4])
        _ = repository.prepare(second)
        fetcher.respond(1, body: [5, 6, 7, 8])
        #expect(disk.record(forKey: first.cacheKey) == nil, "the write of the first body is still queued")
        let read = Replies<[UInt8]>()
        repository.read(first, offset: 0, count: 4) {
            read.record((try? $0.get())?.bytes.copyBytes(offset: 0, count: 4) ?? [])
        }
        #expect(fetcher.transfers.count == 2, "no second transfer of the first URL")
        #expect(read.all == [[1, 2, 3, 4]])
        repository.flushDiskWrites()
        #expect(disk.record(forKey: first.cacheKey)?.size == 4)
    }

    @Test("rm of a URL whose write is queued: not served from the queue any more")
    func evictedByRemoval() {
        let repository = repository()
        _ = repository.prepare(first)
        fetcher.respond(0, body: [1, 2, 3, 4])
        repository.evict(first)
        _ = repository.prepare(first)
        #expect(fetcher.transfers.count == 2, "fetched again after rm")
        fetcher.fail(1, .cancelled)
        repository.flushDiskWrites()
        #expect(disk.record(forKey: first.cacheKey) == nil, "the queued write was called off by rm")
    }
}
