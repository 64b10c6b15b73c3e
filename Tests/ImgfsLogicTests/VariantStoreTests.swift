import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import ImgfsWorkers
import Synchronization
import Testing

/// A maker that records where and how often it ran, and answers what the test says.
final class CountingMaker: VariantMaking, @unchecked Sendable {
    let calls = Mutex<[(onWorker: Bool, bytes: [UInt8], size: Int)]>([])
    let answer: Answer

    typealias Answer = @Sendable ([UInt8], VariantSpecification) -> Result<MadeVariant, VariantError>

    init(
        answer: @escaping Answer = { bytes, spec in
            .success(MadeVariant(bytes: [UInt8(spec.longerSide & 0xff)] + bytes, format: .jpeg, width: 1, height: 1))
        }
    ) {
        self.answer = answer
    }

    func makeVariant(
        of original: UnsafeRawBufferPointer, _ specification: VariantSpecification
    )
        -> Result<MadeVariant, VariantError>
    {
        let bytes = [UInt8](original)
        calls.withLock { $0.append((Self.onVariantWorker, bytes, specification.longerSide)) }
        return answer(bytes, specification)
    }

    var count: Int { calls.withLock { $0.count } }

    /// Whether the calling thread is a variant worker (named `imgfs-variant…` by its pool).
    static var onVariantWorker: Bool {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix("imgfs-variant")
    }
}

@Suite("Variant store")
struct VariantStoreTests {
    let fetcher = ManualFetcher()
    let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    func store(_ maker: CountingMaker, disk: FakeDisk? = FakeDisk()) -> VariantStore {
        .forTests(fetcher: fetcher, maker: maker, disk: disk)
    }

    /// Waits (up to 5 s) until `replies` has `count` values.
    func wait<Value>(_ replies: Replies<Value>, count: Int) -> [Value] {
        Poll.until(timeout: 5, interval: 0.005) { replies.all.count >= count }
        return replies.all
    }

    @Test("callers of one size share one production; each size is made once, from one transfer, on the workers")
    func coalescing() throws {
        let maker = CountingMaker()
        let store = store(maker)
        let replies = Replies<Result<VariantStore.Variant, VariantError>>()
        for index in 0..<30 { store.variant([64, 256, 1024][index % 3], of: url, refresh: true) { replies.record($0) } }
        #expect(fetcher.transfers.count == 1)
        fetcher.respond(0, body: [1, 2, 3])
        let results = wait(replies, count: 30)
        #expect(results.count == 30 && results.allSatisfy { (try? $0.get()) != nil })
        #expect(maker.count == 3)
        let onWorkers = maker.calls.withLock { calls in
            calls.allSatisfy { $0.onWorker && $0.bytes == [1, 2, 3] }
        }
        #expect(onWorkers)
        #expect(!CountingMaker.onVariantWorker, "the test's own thread is not a worker")
        // Cached now: no new production.
        let again = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: url, refresh: true) { again.record($0) }
        #expect(try wait(again, count: 1).first?.get().metadata.size == 4)
        #expect(maker.count == 3)
        #expect(store.cachedVariants(256).map(\.url) == [url])
        #expect(store.cachedVariants(128).isEmpty)
    }

    @Test("with one worker, an original still arriving holds no worker: another's variant is made meanwhile")
    func waitingOutsideThePool() throws {
        let maker = CountingMaker()
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        let repository = ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: nil,
            configuration: configuration, logger: .init(label: "test"))
        let store = VariantStore(
            repository: repository, maker: maker, memory: MemoryCache(budget: 1 << 20), disk: nil,
            workers: WorkerPool(name: "imgfs-variant"), configuration: VariantStore.Configuration(),
            logger: .init(label: "test"))
        let slow = try ImageURL("http://127.0.0.1/slow.png")
        let slowReplies = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: slow, refresh: true) { slowReplies.record($0) }
        // Its size is known and half of it has arrived: the variant waits for the rest.
        let observer = fetcher.transfers[0].observer
        _ = observer.transferDidReceive(head: ResponseHead(status: 200, contentLength: 4, contentType: "image/png"))
        [UInt8]([1, 2]).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        Thread.sleep(forTimeInterval: 0.05)
        let fastReplies = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: url, refresh: true) { fastReplies.record($0) }
        fetcher.respond(1, body: [7, 7, 7])
        #expect((try? wait(fastReplies, count: 1).first?.get()) != nil, "made while the other original arrives")
        #expect(slowReplies.all.isEmpty && maker.calls.withLock { $0.map(\.bytes) } == [[7, 7, 7]])
        [UInt8]([3, 4]).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
        #expect((try? wait(slowReplies, count: 1).first?.get()) != nil)
        #expect(maker.calls.withLock { $0.map(\.bytes) } == [[7, 7, 7], [1, 2, 3, 4]])
    }

    @Test("a decoder failure is answered to every waiter, cached nowhere, remembered while the original is the same")
    func failure() throws {
        let maker = CountingMaker { _, _ in .failure(.undecodable("broken")) }
        let disk = FakeDisk()
        let store = store(maker, disk: disk)
        let replies = Replies<Result<VariantStore.Variant, VariantError>>()
        for _ in 0..<4 { store.variant(256, of: url, refresh: true) { replies.record($0) } }
        fetcher.respond(0, body: [9, 9])
        let results = wait(replies, count: 4)
        let broken = results.allSatisfy { if case .failure(.undecodable("broken")) = $0 { true } else { false } }
        #expect(results.count == 4 && broken)
        #expect(store.knownFailure(256, of: url) == .undecodable("broken"))
        #expect(store.cachedVariants(256).isEmpty && disk.keys().isEmpty)
        let again = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(256, of: url, refresh: true) { again.record($0) }
        #expect(wait(again, count: 1).count == 1)
        #expect(maker.count == 1, "not decoded again")
    }

    @Test("a failed original fails its variant with the original's error; nothing is decoded")
    func failedOriginal() throws {
        let maker = CountingMaker()
        let store = store(maker)
        let replies = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(64, of: url, refresh: true) { replies.record($0) }
        fetcher.fail(0, .httpStatus(404))
        guard case .failure(let error)? = wait(replies, count: 1).first else {
            Issue.record("no failure")
            return
        }
        #expect(error == .original(.httpStatus(404)))
        #expect(VariantError.original(.httpStatus(404)).filesystemError == .notFound)
        #expect(maker.count == 0)
    }

    @Test("errno of each failure: EFBIG for a bomb, EIO undecodable, EMEDIUMTYPE not rasterized")
    func errnos() {
        #expect(VariantError.tooManyPixels(width: 30000, height: 30000, limit: 100).filesystemError == .fileTooLarge)
        #expect(VariantError.undecodable("x").filesystemError == .ioFailure)
        #expect(VariantError.notRaster("svg").filesystemError == .notAnImage)
    }

    @Test("evict drops a variant from memory and disk; the original is left alone")
    func evict() throws {
        let maker = CountingMaker()
        let disk = FakeDisk()
        let store = store(maker, disk: disk)
        let replies = Replies<Result<VariantStore.Variant, VariantError>>()
        store.variant(128, of: url, refresh: true) { replies.record($0) }
        fetcher.respond(0, body: [5])
        _ = wait(replies, count: 1)
        store.flushDiskWrites()
        #expect(disk.keys().count == 1)
        store.evict(128, of: url)
        #expect(disk.keys().isEmpty && store.cachedVariants(128).isEmpty)
    }
}
