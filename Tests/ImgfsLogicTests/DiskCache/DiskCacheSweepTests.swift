import Foundation
import Testing

@testable import ImgfsModel

@Suite("Disk cache: sweeping and concurrent use")
struct DiskCacheSweepTests {
    @Test("sweep removes only entries expired before the date, and old temporary files")
    func sweep() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let now = Date()
        let expiries: [TimeInterval] = [-7_200, -3_600, -60, 60, 3_600]
        var keys: [String] = []
        do {
            let cache = try fixture.open()
            for (index, expiry) in expiries.enumerated() {
                keys.append(
                    try cache.store(
                        DiskCacheFixture.record(
                            "https://example.com/\(index)",
                            expiresAt: now + expiry),
                        body: DiskCacheFixture.body(100 * (index + 1))
                    ).key)
            }
        }
        let subdirectory = fixture.subdirectory(for: keys[0])
        let oldTemporary = subdirectory.appendingPathComponent(keys[0] + ".00000000000000aa.tmp")
        let youngTemporary = subdirectory.appendingPathComponent(keys[0] + ".00000000000000bb.tmp")
        let cache = try fixture.open()
        try fixture.write([1, 2], to: oldTemporary, modified: now - 120)
        try fixture.write([1, 2], to: youngTemporary, modified: now - 10)
        _ = cache.record(forKey: keys[1])  // one record already read, the others are read by the sweep
        let result = cache.sweep(now: now, removeExpiredBefore: now - 1_800)
        #expect(result.removedEntries == 2)
        #expect(result.removedBytes == 300)
        #expect(Set(cache.keys()) == Set(keys[2...]))
        #expect(cache.totalBytes == 1_200)
        #expect(!FileManager.default.fileExists(atPath: oldTemporary.path))
        #expect(FileManager.default.fileExists(atPath: youngTemporary.path))
        #expect(cache.sweep(now: now, removeExpiredBefore: now - 1_800) == (0, 0))
        #expect(cache.sweep(now: now, removeExpiredBefore: now).removedEntries == 1)
        #expect(fixture.files().filter { $0.hasSuffix(".meta") }.count == 2)
    }

    @Test("sweep removes entries whose record is unreadable, and keeps renewed ones")
    func sweepAfterUpdate() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let now = Date()
        let cache = try fixture.open()
        let renewed = try cache.store(
            DiskCacheFixture.record("https://example.com/r", expiresAt: now - 3_600), body: [1])
        let broken = try cache.store(
            DiskCacheFixture.record("https://example.com/b", expiresAt: now + 3_600), body: [2])
        var record = renewed
        record.expiresAt = now + 3_600
        try cache.update(record)
        let reopened = try fixture.open()
        try fixture.write(Array("{".utf8), to: fixture.metaFile(for: broken.key))
        #expect(reopened.sweep(now: now, removeExpiredBefore: now) == (0, 0))
        #expect(reopened.keys() == [renewed.key])
    }

    @Test("stores, reads, touches, removals and sweeps from many threads keep the cache consistent")
    func concurrency() async throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open(sizeLimit: 40_000)
        let urls = (0..<16).map { "https://example.com/c\($0)" }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for round in 0..<100 {
                        let url = urls[(round * 7 + worker) % urls.count]
                        let key = DiskCacheFixture.key(url)
                        let seed = UInt8(truncatingIfNeeded: round)
                        switch (round + worker) % 5 {
                        case 0, 1:
                            _ = try? cache.store(
                                DiskCacheFixture.record(url), body: DiskCacheFixture.body(3_000, seed: seed))
                        case 2:
                            if let bytes = try? cache.readAll(key: key) {
                                // body(_:seed:) starts with seed * 7; 183 is the inverse of 7 modulo 256.
                                let seed = UInt8(truncatingIfNeeded: Int(bytes.first ?? 0) * 183)
                                #expect(bytes == DiskCacheFixture.body(3_000, seed: seed))
                            }
                        case 3: cache.touch(key: key); _ = cache.record(forKey: key)
                        default:
                            if round % 10 == 0 {
                                cache.remove(key: key)
                            } else {
                                _ = cache.sweep(now: Date(), removeExpiredBefore: Date(timeIntervalSince1970: 0))
                            }
                        }
                        #expect(cache.totalBytes <= 40_000)
                    }
                }
            }
        }
        let usage = fixture.diskUsage()
        #expect(usage.bodies == cache.totalBytes)
        #expect(cache.keys().count == cache.count)
        #expect(fixture.files().filter { $0.hasSuffix(".meta") }.count == cache.count)
        let reopened = try fixture.open(sizeLimit: 40_000)
        for key in reopened.keys() { #expect(try reopened.readAll(key: key).count == 3_000) }
    }
}
