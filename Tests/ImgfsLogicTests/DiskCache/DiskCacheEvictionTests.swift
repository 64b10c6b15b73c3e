import Foundation
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

@Suite("Disk cache: size limit and least-recently-used eviction")
struct DiskCacheEvictionTests {
    @Test("storing three times the limit keeps the total, and the files, within it; recently used entries stay")
    func sizeCap() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let clock = DiskCacheTestClock()
        let limit = 100_000
        let cache = try fixture.open(sizeLimit: limit, now: { clock.now })
        var keys: [String] = []
        for index in 0..<30 {
            clock.advance(1)
            let record = try cache.store(
                DiskCacheFixture.record("https://example.com/\(index)"),
                body: DiskCacheFixture.body(10_000, seed: UInt8(index)))
            keys.append(record.key)
            if index >= 5 {
                clock.advance(1)
                cache.touch(key: keys[0])
                _ = try cache.read(key: keys[5], offset: 0, count: 1)
            }
            #expect(cache.totalBytes <= limit)
        }
        #expect(cache.count == 10)
        #expect(cache.evictionCount == 20)
        #expect(Set(cache.keys()) == Set([keys[0], keys[5]] + keys[22...]))
        let usage = fixture.diskUsage()
        #expect(usage.bodies == cache.totalBytes)
        #expect(usage.all <= limit + 10 * 1_024, "bodies within the limit, plus small records")
        #expect(!fixture.files().contains { $0.hasSuffix(".tmp") })
    }

    @Test("a body larger than the limit is not kept, and replaces nothing")
    func tooLarge() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open(sizeLimit: 1_000)
        let small = try cache.store(
            DiskCacheFixture.record("https://example.com/small"), body: DiskCacheFixture.body(600))
        let record = DiskCacheFixture.record("https://example.com/big")
        try cache.store(record, body: DiskCacheFixture.body(900))
        let big = try cache.store(record, body: DiskCacheFixture.body(1_001))
        #expect(big.size == 1_001)
        #expect(cache.record(forKey: record.key) == nil)
        #expect(cache.record(forKey: small.key) == nil, "evicted for the 900 bytes")
        #expect(cache.count == 0)
        #expect(fixture.files().isEmpty)
    }

    @Test("the use order survives a restart (last use persisted at most once a minute)")
    func orderAfterRestart() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let clock = DiskCacheTestClock(Date(timeIntervalSinceNow: -86_400))
        var keys: [String] = []
        do {
            let cache = try fixture.open(now: { clock.now })
            for index in 0..<4 {
                keys.append(
                    try cache.store(
                        DiskCacheFixture.record("https://example.com/\(index)"),
                        body: DiskCacheFixture.body(100)
                    ).key)
            }
            let checksum = CRC32.checksum(DiskCacheFixture.body(100))
            for (index, key) in keys.enumerated() {
                try FileManager.default.setAttributes(
                    [.modificationDate: clock.now + Double(index)],
                    ofItemAtPath: fixture.dataFile(for: key, checksum: checksum).path)
            }
            clock.advance(120)
            cache.touch(key: keys[0])  // persisted: more than a minute since the last write
            let dataFile = fixture.dataFile(for: keys[0], checksum: CRC32.checksum(DiskCacheFixture.body(100)))
            let persisted = try #require(
                FileManager.default.attributesOfItem(atPath: dataFile.path)[.modificationDate]
                    as? Date)
            #expect(abs(persisted.timeIntervalSince(clock.now)) < 0.01)
            clock.advance(10)
            cache.touch(key: keys[0])  // not persisted: within a minute
            #expect(
                try FileManager.default.attributesOfItem(atPath: dataFile.path)[.modificationDate] as? Date == persisted
            )
        }
        let cache = try fixture.open(sizeLimit: 300)
        #expect(cache.count == 3)
        #expect(cache.evictionCount == 1)
        #expect(Set(cache.keys()) == Set([keys[0]] + keys[2...]), "the untouched oldest entry was evicted")
    }
}
