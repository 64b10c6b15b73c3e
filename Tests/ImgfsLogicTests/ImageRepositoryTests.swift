import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Image repository")
struct ImageRepositoryTests {
    let fetcher = ManualFetcher()
    let disk = FakeDisk()
    let clock = TestClock()
    let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    func repository(
        policy: CachePolicy = .cacheElseLoad, lifetime: TimeInterval = 60, cacheControl: Bool = false,
        memory: Int = 1 << 20, disk useDisk: Bool = true
    ) -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.policy = policy
        configuration.expiry = ExpiryPolicy(lifetime: lifetime, honorsCacheControl: cacheControl)
        configuration.limits.requireImage = false
        // Disk writes run inline, so a body is on disk once its transfer has been answered.
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: memory), disk: useDisk ? disk : nil,
            configuration: configuration, logger: .init(label: "test"), now: { [clock] in clock.now },
            diskWriter: InlineWorker())
    }

    func read(_ repository: ImageRepository, _ url: ImageURL? = nil) -> Result<[UInt8], FetchError>? {
        let replies = Replies<Result<[UInt8], FetchError>>()
        repository.read(url ?? self.url, offset: 0, count: 1 << 20) {
            replies.record($0.map { $0.bytes.copyBytes(offset: $0.offset, count: $0.count) })
        }
        return replies.all.first
    }

    @Test("32 concurrent callers of one URL share one transfer; a fragment is not part of it")
    func dedup() async throws {
        let repository = repository()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<32 { group.addTask { _ = repository.prepare(url) } }
        }
        _ = repository.prepare(try ImageURL("http://127.0.0.1/a.png#.png"))
        #expect(fetcher.transfers.count == 1)
        #expect(repository.statistics().counters.joined == 32)
    }

    @Test("a fetched image is served from memory, then from disk after a restart, without the network")
    func tiers() throws {
        let first = repository()
        _ = first.prepare(url)
        fetcher.respond(0, body: [1, 2, 3])
        #expect(read(first) == .success([1, 2, 3]))
        #expect(first.statistics().memory.hits >= 1)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3)
        let second = repository()
        #expect(try second.prepare(url).get()?.size == 3, "known from disk at lookup")
        #expect(read(second) == .success([1, 2, 3]))
        #expect(second.statistics().counters.diskHits == 1)
        #expect(fetcher.transfers.count == 1)
    }

    @Test("an expired copy is revalidated with its validators; 304 renews it without a body")
    func revalidation() throws {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.respond(0, body: [7, 7], etag: "\"v1\"")
        clock.advance(61)
        #expect(try repository.prepare(url).get() == nil, "the lookup does not wait for the revalidation")
        #expect(fetcher.transfers.count == 2)
        #expect(fetcher.transfers[1].request.etag == "\"v1\"")
        fetcher.respondNotModified(1)
        #expect(read(repository) == .success([7, 7]))
        #expect(repository.statistics().counters.notModified == 1)
        #expect(disk.record(forKey: url.cacheKey)!.expiresAt == clock.now + 60)
        _ = repository.prepare(url)
        #expect(fetcher.transfers.count == 2, "fresh again")
    }

    @Test("stale-if-error: an expired copy is served when the origin cannot be reached; a 404 drops it")
    func staleIfError() throws {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.respond(0, body: [5])
        clock.advance(61)
        let replies = Replies<Int>()
        repository.metadata(url, refresh: true) { replies.record((try? $0.get())?.size ?? -1) }
        fetcher.fail(1, .unreachable("connection refused"))
        #expect(replies.all == [1])
        #expect(read(repository) == .success([5]))
        #expect(repository.statistics().counters.staleServed >= 1)
        clock.advance(11)  // past the memory of the failure (10 s), in which the expired copy is served unasked
        repository.metadata(url, refresh: true) { replies.record((try? $0.get())?.size ?? -1) }
        fetcher.fail(2, .httpStatus(404))
        #expect(replies.all == [1, -1])
        #expect(disk.record(forKey: url.cacheKey) == nil)
    }

    @Test("cache-only never starts a transfer; a miss is notCached")
    func cacheOnly() throws {
        let repository = repository(policy: .cacheOnly)
        #expect(repository.prepare(url) == .failure(.notCached))
        #expect(fetcher.transfers.isEmpty)
    }

    @Test("reload fetches a cached URL again once per session")
    func reload() throws {
        let warm = repository()
        _ = warm.prepare(url)
        fetcher.respond(0, body: [1])
        let reloading = repository(policy: .reload)
        _ = reloading.prepare(url)
        #expect(fetcher.transfers.count == 2 && !fetcher.transfers[1].request.isConditional)
        fetcher.respond(1, body: [2])
        _ = reloading.prepare(url)
        #expect(fetcher.transfers.count == 2)
        #expect(read(reloading) == .success([2]))
    }

    @Test("Cache-Control no-store is not written to disk; max-age=0 is revalidated on the next open")
    func cacheControl() throws {
        let repository = repository(cacheControl: true)
        _ = repository.prepare(url)
        fetcher.respond(0, body: [1], cacheControl: "no-store")
        #expect(disk.record(forKey: url.cacheKey) == nil)
        let other = try ImageURL("http://127.0.0.1/b.png")
        _ = repository.prepare(other)
        fetcher.respond(1, body: [2], etag: "\"b\"", cacheControl: "max-age=0")
        clock.advance(2)  // past the one second in which a response counts as fresh whatever it says
        _ = repository.prepare(other)
        #expect(fetcher.transfers.count == 3 && fetcher.transfers[2].request.etag == "\"b\"")
    }

    @Test("404 is remembered for the negative TTL; a corrupt disk entry is fetched again")
    func failuresAndCorruption() throws {
        let repository = repository()
        _ = repository.prepare(url)
        fetcher.fail(0, .httpStatus(404))
        #expect(repository.prepare(url) == .failure(.httpStatus(404)))
        #expect(fetcher.transfers.count == 1)
        clock.advance(61)
        _ = repository.prepare(url)
        #expect(fetcher.transfers.count == 2)
        fetcher.respond(1, body: [9, 9])
        let restarted = self.repository()
        disk.corrupt(url.cacheKey)
        let replies = Replies<Result<[UInt8], FetchError>>()
        restarted.read(url, offset: 0, count: 10) {
            replies.record($0.map { $0.bytes.copyBytes(offset: $0.offset, count: $0.count) })
        }
        #expect(fetcher.transfers.count == 3, "refetched after the checksum failed")
        fetcher.respond(2, body: [9, 9])
        #expect(replies.all == [.success([9, 9])])
    }

    @Test("a purge empties the memory cache while a reader of an open download still gets its bytes")
    func purge() throws {
        let repository = repository(disk: false)
        _ = repository.prepare(url)
        let observer = fetcher.transfers[0].observer
        observer.transferDidReceive(head: ResponseHead(status: 200, contentLength: 4))
        [UInt8]([1, 2]).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        let replies = Replies<Result<[UInt8], FetchError>>()
        repository.read(url, offset: 0, count: 4) {
            replies.record($0.map { $0.bytes.copyBytes(offset: $0.offset, count: $0.count) })
        }
        #expect(repository.tiers.purgeMemory(reason: "test") == 0)
        [UInt8]([3, 4]).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
        #expect(replies.all == [.success([1, 2, 3, 4])])
        #expect(repository.statistics().memoryBytes == 4)
        #expect(repository.tiers.purgeMemory(reason: "test") == 4)
        #expect(repository.statistics().memoryBytes == 0)
        #expect(repository.statistics().memory.purges == 2)
    }
}
