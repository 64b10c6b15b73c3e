import Foundation
import ImgfsModel
import ImgfsStore
import Synchronization

/// An in-memory DiskCaching for repository tests; `corrupt(key)` makes the next read of an entry fail as a real
/// corrupt entry would.
final class FakeDisk: DiskCaching, @unchecked Sendable {
    private let entries = Mutex<[String: (record: CacheRecord, body: [UInt8], corrupt: Bool)]>([:])

    private let reads = Mutex(0)

    func record(forKey key: String) -> CacheRecord? {
        reads.withLock { $0 += 1 }
        return entries.withLock { $0[key]?.record }
    }

    var recordReads: Int { reads.withLock { $0 } }
    func resetRecordReads() { reads.withLock { $0 = 0 } }

    /// Called with the step's index before the fake's `pace` call for each byte of a stored body (tests that watch a
    /// write's steps set it).
    let beforeStep = Mutex<(@Sendable (Int) -> Void)?>(nil)

    /// The keys of each ``store(batch:)``, in order.
    let batches = Mutex<[[String]]>([])

    func store(batch writes: [DiskCacheWrite]) -> [Result<CacheRecord, any Error>] {
        batches.withLock { $0.append(writes.map(\.record.key)) }
        return writes.map { write in Result { try store(write.record, body: write.body, pace: {}) } }
    }

    func store(_ record: CacheRecord, body: UnsafeRawBufferPointer, pace: () -> Void) throws -> CacheRecord {
        let hook = beforeStep.withLock { $0 }
        for index in body.indices {
            hook?(index)
            pace()
        }
        entries.withLock { $0[record.key] = (record, Array(body), false) }
        return record
    }

    func read(key: String, offset: Int, count: Int) throws -> [UInt8] {
        let body = try readAll(key: key)
        return Array(body[min(offset, body.count)..<min(offset + count, body.count)])
    }

    func readAll(key: String) throws -> [UInt8] {
        try entries.withLock { entries in
            guard let entry = entries[key] else { throw DiskCacheError.corrupt(key) }
            if entry.corrupt {
                entries[key] = nil
                throw DiskCacheError.corrupt(key)
            }
            return entry.body
        }
    }

    func update(_ record: CacheRecord) throws { entries.withLock { $0[record.key]?.record = record } }
    func touch(key: String) {}
    func remove(key: String) { _ = entries.withLock { $0.removeValue(forKey: key) } }
    func keys() -> [String] { entries.withLock { $0.keys.sorted() } }
    func removeAll() { entries.withLock { $0.removeAll() } }
    func sweep(
        now: Date, removeExpiredBefore: Date, keeping: (String) -> Bool
    ) -> (removedEntries: Int, removedBytes: Int) {
        entries.withLock { entries in
            let expired = entries.filter {
                $0.value.record.expiresAt < removeExpiredBefore && !keeping($0.value.record.url)
            }
            expired.keys.forEach { entries[$0] = nil }
            return (expired.count, expired.values.reduce(0) { $0 + $1.body.count })
        }
    }
    var totalBytes: Int { entries.withLock { $0.values.reduce(0) { $0 + $1.body.count } } }
    var count: Int { entries.withLock { $0.count } }
    var evictionCount: Int { 0 }

    func corrupt(_ key: String) { entries.withLock { $0[key]?.corrupt = true } }
}

/// A clock tests move by hand.
final class TestClock: @unchecked Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
