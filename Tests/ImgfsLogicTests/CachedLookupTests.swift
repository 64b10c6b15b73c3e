import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import ImgfsWorkers
import Testing

/// Issue 35: one "what is cached" query (``CacheTiers/lookup(_:counting:)``). An image or a variant held only by the
/// disk-write queue (memory let it go, its write has not landed) is seen by every question: the listing, the URL of
/// a key (digest names), the size, and the report behind the `source` attribute.
@Suite("One cached look-up: bodies waiting for their disk write")
struct CachedLookupTests {
    let fetcher = ManualFetcher()
    let writes = HeldWorker()
    let first: ImageURL
    let second: ImageURL

    init() throws {
        first = try ImageURL("http://127.0.0.1/first.png")
        second = try ImageURL("http://127.0.0.1/second.png")
    }

    func repository(memory: Int, disk: FakeDisk?) -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: memory), disk: disk, configuration: configuration,
            logger: .init(label: "test"), diskWriter: writes)
    }

    @Test("an image evicted from memory whose write waits: listed, named, sized and reported")
    func queuedImage() {
        let disk = FakeDisk()
        let repository = repository(memory: 6, disk: disk)
        _ = repository.prepare(first)
        fetcher.respond(0, body: [1, 2, 3, 4])
        _ = repository.prepare(second)
        fetcher.respond(1, body: [5, 6, 7, 8])
        let key = first.cacheKey
        #expect(writes.waiting > 0 && disk.record(forKey: key) == nil, "its write has not landed")
        #expect(repository.tiers.memory.peek(key) == nil, "memory let it go")
        #expect(repository.tiers.keys() == [key, second.cacheKey].sorted())
        #expect(repository.tiers.url(forKey: key) == first)
        #expect(repository.tiers.lookup(key)?.metadata.size == 4)
        let report = repository.report(first)
        #expect(report.source == .memory && report.metadata?.size == 4)
        repository.flushDiskWrites()
        #expect(repository.report(first).source == .disk)
        #expect(fetcher.transfers.count == 2)
    }

    @Test("rm while its write is under way: the write lands, then is removed again; nothing is listed")
    func removedDuringWrite() {
        let disk = FakeDisk()
        let repository = repository(memory: 1 << 20, disk: disk)
        _ = repository.prepare(first)
        fetcher.respond(0, body: [1, 2, 3, 4])
        disk.beforeStep.withLock { hook in
            hook = { step in if step == 0 { repository.evict(first) } }
        }
        repository.flushDiskWrites()
        #expect(disk.record(forKey: first.cacheKey) == nil && repository.tiers.keys().isEmpty)
    }

    @Test("a variant memory cannot hold whose write waits: listed, sized and reported, not made again")
    func queuedVariant() throws {
        let disk = FakeDisk()
        let repository = repository(memory: 1 << 20, disk: nil)
        let maker = CountingMaker()
        let store = VariantStore(
            repository: repository, maker: maker, memory: MemoryCache(budget: 2), disk: disk,
            workers: WorkerPool(name: "imgfs-variant"), configuration: VariantStore.Configuration(),
            logger: .init(label: "test"))
        let made = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: first, refresh: true) { made.record($0) }
        fetcher.respond(0, body: [1, 2, 3])
        Poll.until(timeout: 5, interval: 0.005) { !made.all.isEmpty }
        #expect(try made.all.first?.get().metadata.size == 4)
        #expect(writes.waiting > 0 && disk.keys().isEmpty, "its write has not landed")
        #expect(store.cachedVariants(256).map(\.url) == [first])
        let report = store.report(256, of: first)
        #expect(report.source == .memory && report.variant?.metadata.size == 4)
        #expect(store.knownFailure(256, of: first) == nil)
        #expect(repository.tiers.keys() == [first.cacheKey], "variants are not among the images")
        let again = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: first, refresh: false) { again.record($0) }
        #expect(try again.all.first?.get().metadata.size == 4, "answered at once from the queue")
        #expect(maker.count == 1)
        store.flushDiskWrites()
        #expect(disk.keys().count == 1 && store.report(256, of: first).source == .disk)
    }
}
