import Foundation
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

@Suite("Disk cache: storing, reading, restarting")
struct DiskCacheBasicsTests {
    @Test("CRC-32 matches the standard check value, piecewise too")
    func crc() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([]) == 0)
        let body = DiskCacheFixture.body(100_003)
        let whole = CRC32.checksum(body)
        let pieces = body.withUnsafeBytes { bytes in
            CRC32.update(
                CRC32.update(0, with: .init(rebasing: bytes[..<77])),
                with: .init(rebasing: bytes[77...]))
        }
        #expect(pieces == whole)
        var bitwise: UInt32 = 0xFFFF_FFFF
        for byte in body {
            bitwise ^= UInt32(byte)
            for _ in 0..<8 { bitwise = bitwise & 1 == 1 ? (bitwise >> 1) ^ 0xEDB8_8320 : bitwise >> 1 }
        }
        #expect(~bitwise == whole)
    }

    @Test("a stored body reads back whole, in ranges, clamped at the end")
    func roundTrip() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open()
        let body = DiskCacheFixture.body(10_000)
        let stored = try cache.store(DiskCacheFixture.record("https://example.com/a.png"), body: body)
        #expect(stored.size == 10_000)
        #expect(stored.checksum == CRC32.checksum(body))
        #expect(cache.record(forKey: stored.key) == stored)
        #expect(try cache.readAll(key: stored.key) == body)
        #expect(try cache.read(key: stored.key, offset: 100, count: 50) == Array(body[100..<150]))
        #expect(try cache.read(key: stored.key, offset: 9_990, count: 50) == Array(body[9_990...]))
        #expect(try cache.read(key: stored.key, offset: 10_000, count: 5) == [])
        #expect(try cache.read(key: stored.key, offset: 20_000, count: 5) == [])
        #expect(try cache.read(key: stored.key, offset: 0, count: 0) == [])
        #expect(throws: DiskCacheError.self) { try cache.read(key: stored.key, offset: -1, count: 5) }
        #expect(throws: DiskCacheError.notFound(DiskCacheFixture.key("other"))) {
            try cache.readAll(key: DiskCacheFixture.key("other"))
        }
        #expect(cache.count == 1)
        #expect(cache.totalBytes == 10_000)
        #expect(try #require(cache.record(forKey: stored.key)).lastAccess > stored.lastAccess, "reads count as use")
    }

    @Test("a store checksums and writes a body in one pass: a pace before each step of both, and before the sync")
    func pacedStore() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open(durable: true, paceStep: 4)
        let url = "http://127.0.0.1/paced.png"
        let body = DiskCacheFixture.body(10)
        var paces = 0
        let stored = try body.withUnsafeBytes {
            try cache.store(DiskCacheFixture.record(url), body: $0, pace: { paces += 1 })
        }
        #expect(paces == 3 + 1, "3 steps that each checksum and write a piece, 1 sync")
        #expect(stored.checksum == CRC32.checksum(body))
        #expect(try cache.readAll(key: DiskCacheFixture.key(url)) == body)
    }

    @Test("a store's pauses hold no lock: a removal finishes while the store waits in its write")
    func pacedStoreHoldsNoLock() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open(paceStep: 4)
        let other = DiskCacheFixture.key("http://127.0.0.1/other.png")
        try cache.store(DiskCacheFixture.record("http://127.0.0.1/other.png"), body: DiskCacheFixture.body(8))
        let url = "http://127.0.0.1/paced.png"
        let body = DiskCacheFixture.body(10)
        var paces = 0
        var removedDuringPause = false
        try body.withUnsafeBytes { bytes in
            _ = try cache.store(
                DiskCacheFixture.record(url), body: bytes,
                pace: {
                    paces += 1
                    guard paces == 2 else { return }  // the second step of the write
                    let done = DispatchSemaphore(value: 0)
                    Thread.detachNewThread {
                        cache.remove(key: other)
                        done.signal()
                    }
                    removedDuringPause = done.wait(timeout: .now() + 2) == .success
                })
        }
        #expect(removedDuringPause, "the removal did not wait for the store")
        #expect(cache.record(forKey: other) == nil)
        #expect(try cache.readAll(key: DiskCacheFixture.key(url)) == body)
    }

    @Test("records and bodies survive a restart; the first read verifies and then reads")
    func restart() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let urls = (0..<20).map { "https://example.com/\($0).jpg" }
        var stored: [CacheRecord] = []
        do {
            let cache = try fixture.open(durable: true)
            for (index, url) in urls.enumerated() {
                stored.append(
                    try cache.store(
                        DiskCacheFixture.record(url),
                        body: DiskCacheFixture.body(
                            index * 100,
                            seed: UInt8(index))))
            }
        }
        let reopened = try fixture.open()
        #expect(reopened.count == 20)
        #expect(reopened.totalBytes == (0..<20).reduce(0) { $0 + $1 * 100 })
        #expect(reopened.keys() == stored.map(\.key).sorted())
        for (index, record) in stored.enumerated() {
            var found = try #require(reopened.record(forKey: record.key))
            #expect(abs(found.lastAccess.timeIntervalSince(record.lastAccess)) < 2)
            found.lastAccess = record.lastAccess
            #expect(found == record)
            #expect(
                try reopened.read(key: record.key, offset: 10, count: 20)
                    == Array(DiskCacheFixture.body(index * 100, seed: UInt8(index)).dropFirst(10).prefix(20)))
        }
    }

    @Test("replacing an entry keeps one body file and the newest content, also after a restart")
    func replace() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let record = DiskCacheFixture.record("https://example.com/r.gif")
        do {
            let cache = try fixture.open()
            try cache.store(record, body: DiskCacheFixture.body(500, seed: 1))
            try cache.store(record, body: DiskCacheFixture.body(700, seed: 2))
            try cache.store(record, body: DiskCacheFixture.body(700, seed: 2))
            #expect(cache.count == 1)
            #expect(cache.totalBytes == 700)
        }
        #expect(fixture.files().count == 2)
        let cache = try fixture.open()
        #expect(try cache.readAll(key: record.key) == DiskCacheFixture.body(700, seed: 2))
    }

    @Test("update renews the record without touching the body")
    func update() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let body = DiskCacheFixture.body(2_000)
        var record = DiskCacheFixture.record(
            "https://example.com/u.png", expiresAt: Date(timeIntervalSince1970: 1_800_000_000))
        do {
            let cache = try fixture.open(durable: true)
            record = try cache.store(record, body: body)
        }
        let dataFile = fixture.dataFile(for: record.key, checksum: record.checksum)
        let before = try FileManager.default.attributesOfItem(atPath: dataFile.path)
        do {
            let cache = try fixture.open(durable: true)
            var renewed = try #require(cache.record(forKey: record.key))
            renewed.expiresAt = Date(timeIntervalSince1970: 1_900_000_000)
            renewed.etag = "\"v2\""
            renewed.checksum = 0  // ignored: the body's stays
            try cache.update(renewed)
            #expect(cache.record(forKey: record.key)?.expiresAt == renewed.expiresAt)
            #expect(throws: DiskCacheError.notFound(DiskCacheFixture.key("missing"))) {
                try cache.update(DiskCacheFixture.record("missing"))
            }
        }
        let after = try FileManager.default.attributesOfItem(atPath: dataFile.path)
        #expect(before[.systemFileNumber] as? Int == after[.systemFileNumber] as? Int, "same inode: not rewritten")
        #expect(before[.modificationDate] as? Date == after[.modificationDate] as? Date)
        let cache = try fixture.open()
        let found = try #require(cache.record(forKey: record.key))
        #expect(found.expiresAt == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(found.etag == "\"v2\"")
        #expect(found.checksum == record.checksum)
        #expect(try cache.readAll(key: record.key) == body)
    }

    @Test("remove and removeAll delete entries and their files")
    func removal() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open()
        let records = try (0..<5).map {
            try cache.store(DiskCacheFixture.record("https://e.com/\($0)"), body: [1, 2, 3])
        }
        cache.remove(key: records[0].key)
        cache.remove(key: DiskCacheFixture.key("never stored"))
        #expect(cache.count == 4)
        #expect(cache.record(forKey: records[0].key) == nil)
        #expect(fixture.files().count == 8)
        cache.removeAll()
        #expect(cache.count == 0)
        #expect(cache.totalBytes == 0)
        #expect(cache.keys().isEmpty)
        #expect(fixture.files().isEmpty)
        #expect(try fixture.open().count == 0)
    }

    @Test("malformed keys are refused; names never come from the URL")
    func keys() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open()
        var record = DiskCacheFixture.record("https://example.com/../../etc/passwd")
        try cache.store(record, body: [1])
        #expect(fixture.files().allSatisfy { $0.hasPrefix(String(record.key.prefix(2)) + "/" + record.key) })
        for bad in ["", "../x", String(repeating: "A", count: 64), String(repeating: "a", count: 63)] {
            record.key = bad
            #expect(throws: DiskCacheError.invalidKey(bad)) { try cache.store(record, body: [1]) }
        }
    }
}
