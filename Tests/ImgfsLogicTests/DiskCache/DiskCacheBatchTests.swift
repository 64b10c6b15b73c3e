import Foundation
import Synchronization
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

@Suite("Disk cache: batches of bodies sharing their syncs")
struct DiskCacheBatchTests {
    typealias Fixture = DiskCacheFixture

    /// Stores `bodies` by URL in one batch of `cache`.
    func storeBatch(_ cache: DiskCache, _ bodies: [(url: String, body: [UInt8])]) -> [Result<CacheRecord, any Error>] {
        let joined = bodies.flatMap(\.body)
        return joined.withUnsafeBytes { all in
            var offset = 0
            return cache.store(
                batch: bodies.map { item in
                    defer { offset += item.body.count }
                    return (
                        Fixture.record(item.url),
                        UnsafeRawBufferPointer(rebasing: all[offset..<offset + item.body.count])
                    )
                })
        }
    }

    @Test("a batch larger than the size limit leaves the cache within it, keeping the batch's last entries")
    func batchOverTheLimit() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let cache = try fixture.open(sizeLimit: 10_000, durable: true)
        try cache.store(Fixture.record("https://example.com/old.png"), body: Fixture.body(3_000, seed: 9))
        let items = (0..<6).map { (url: "https://example.com/\($0).png", body: Fixture.body(3_000, seed: $0)) }
        _ = storeBatch(cache, items)
        #expect(cache.totalBytes <= 10_000, "\(cache.totalBytes) bytes kept")
        #expect(cache.count == 3)
        for index in 3..<6 { #expect(try cache.readAll(key: Fixture.key(items[index].url)) == items[index].body) }
        #expect(fixture.files().count == 6, "the evicted entries' files are gone")
    }

    @Test("a durable batch stores, replaces and keeps entries as single stores do; a reopened cache verifies them")
    func storesLikeSingleStores() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let replaced = "https://example.com/replaced.png"
        let same = "https://example.com/same.png"
        let oldBody = Fixture.body(2_000, seed: 1)
        let sameBody = Fixture.body(1_500, seed: 2)
        do {
            let cache = try fixture.open(durable: true)
            try cache.store(Fixture.record(replaced), body: oldBody)
            try cache.store(Fixture.record(same), body: sameBody)
            let items = [
                (url: replaced, body: Fixture.body(2_500, seed: 3)),
                (url: "https://example.com/new.png", body: Fixture.body(700, seed: 4)),
                (url: same, body: sameBody),
                (url: "https://example.com/empty.png", body: [UInt8]())
            ]
            let results = storeBatch(cache, items)
            #expect(try results.map { try $0.get().size } == items.map(\.body.count))
            #expect(try results.map { try $0.get().checksum } == items.map { CRC32.checksum($0.body) })
            #expect(cache.count == 4)
            #expect(cache.totalBytes == items.reduce(0) { $0 + $1.body.count })
            let files = fixture.files()
            #expect(
                files.count == 8, "a record and a body per entry, the replaced body gone, nothing temporary: \(files)")
            #expect(!files.contains { $0.contains(DiskCacheLayout.hex(CRC32.checksum(oldBody))) })
        }
        let reopened = try fixture.open(durable: true)
        #expect(try reopened.readAll(key: Fixture.key(replaced)) == Fixture.body(2_500, seed: 3))
        #expect(try reopened.readAll(key: Fixture.key(same)) == sameBody)
        #expect(try reopened.readAll(key: Fixture.key("https://example.com/new.png")) == Fixture.body(700, seed: 4))
        #expect(try reopened.readAll(key: Fixture.key("https://example.com/empty.png")) == [])
        #expect(fixture.files().count == 8, "the reopened cache found nothing to remove")
    }

    @Test("a body whose write fails leaves the others stored, its old entry as it was, and nothing partial")
    func oneFailure() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let failing = "https://example.com/failing.png"
        let failingKey = Fixture.key(failing)
        let oldBody = Fixture.body(1_000, seed: 5)
        // Once armed, the record's write of the failing entry fails (after its body was staged).
        let armed = Mutex(false)
        let cache = try fixture.open(
            durable: true,
            writeFault: { path in armed.withLock { $0 } && path.hasSuffix(failingKey + ".meta") ? ENOSPC : nil })
        try cache.store(Fixture.record(failing), body: oldBody)
        armed.withLock { $0 = true }
        let results = storeBatch(
            cache,
            [
                (url: "https://example.com/first.png", body: Fixture.body(800, seed: 6)),
                (url: failing, body: Fixture.body(900, seed: 7)),
                (url: "https://example.com/last.png", body: Fixture.body(600, seed: 8))
            ])
        #expect((try? results[0].get()) != nil)
        #expect(throws: DiskCacheError.noSpace) { try results[1].get() }
        #expect((try? results[2].get()) != nil)
        #expect(try cache.readAll(key: failingKey) == oldBody, "the old entry stays")
        #expect(cache.count == 3)
        #expect(!fixture.files().contains { $0.hasSuffix(".tmp") })
        #expect(fixture.files().count == 6)
    }

    @Test("a batch over the size limit evicts the least recently used entries, never one of its own")
    func evicts() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let cache = try fixture.open(sizeLimit: 3_000, durable: true)
        try cache.store(Fixture.record("https://example.com/old-1.png"), body: Fixture.body(1_000, seed: 1))
        try cache.store(Fixture.record("https://example.com/old-2.png"), body: Fixture.body(1_000, seed: 2))
        let items = (0..<4).map { (url: "https://example.com/new-\($0).png", body: Fixture.body(700, seed: 10)) }
        let results = storeBatch(cache, items)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        #expect(cache.totalBytes <= 3_000)
        #expect(Set(cache.keys()).isSuperset(of: items.map { Fixture.key($0.url) }))
        #expect(cache.evictionCount >= 1)
    }
}
