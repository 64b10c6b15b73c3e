import Foundation
import ImgfsModel

/// One body to store with ``DiskCaching/store(batch:)``, under its record's key.
public typealias DiskCacheWrite = (record: CacheRecord, body: UnsafeRawBufferPointer)

/// What the repository needs from a disk cache (``DiskCache`` is the implementation; tests may use fakes).
///
/// Implementations must be thread safe; `store` and `update` are atomic (a crash leaves the old or the new entry);
/// `read` verifies an entry's checksum the first time it is read after the cache was opened and throws when the entry
/// is corrupt (the entry is then gone).
public protocol DiskCaching: Sendable {
    func record(forKey key: String) -> CacheRecord?
    /// Stores `body` under `record.key`; `pace` is called before each step of the work (a checksum or a write of
    /// at most about 1 MiB, the final sync) and may wait, so that a long write can make way for readers.
    @discardableResult
    func store(_ record: CacheRecord, body: UnsafeRawBufferPointer, pace: () -> Void) throws -> CacheRecord
    /// Stores several bodies, each as `store` would, in order; a body that fails leaves the others alone. An
    /// implementation may share its syncs between them.
    func store(batch writes: [DiskCacheWrite]) -> [Result<CacheRecord, any Error>]
    func read(key: String, offset: Int, count: Int) throws -> [UInt8]
    func readAll(key: String) throws -> [UInt8]
    /// The body of `key` open read-only and verified as `read` verifies; nil when the implementation keeps no files.
    func openBody(key: String) throws -> DiskBodyFile?
    func update(_ record: CacheRecord) throws
    func touch(key: String)
    func remove(key: String)
    func keys() -> [String]
    func removeAll()
    /// Removes the entries that expired before `removeExpiredBefore`, except those whose URL `keeping` accepts.
    func sweep(
        now: Date, removeExpiredBefore: Date, keeping: (String) -> Bool
    ) -> (removedEntries: Int, removedBytes: Int)
    var totalBytes: Int { get }
    var count: Int { get }
    var evictionCount: Int { get }
}

extension DiskCaching {
    /// ``sweep(now:removeExpiredBefore:keeping:)`` keeping nothing.
    public func sweep(now: Date, removeExpiredBefore: Date) -> (removedEntries: Int, removedBytes: Int) {
        sweep(now: now, removeExpiredBefore: removeExpiredBefore, keeping: { _ in false })
    }

    /// No file to hand out (caches that keep no bodies in files).
    public func openBody(key: String) throws -> DiskBodyFile? { nil }

    /// One ``store(_:body:pace:)`` after the other.
    public func store(batch writes: [DiskCacheWrite]) -> [Result<CacheRecord, any Error>] {
        writes.map { write in Result { try store(write.record, body: write.body, pace: {}) } }
    }

    /// ``store(_:body:pace:)`` without pauses.
    @discardableResult
    public func store(_ record: CacheRecord, body: UnsafeRawBufferPointer) throws -> CacheRecord {
        try store(record, body: body, pace: {})
    }
}

extension CacheRecord {
    /// The record's metadata as the filesystem shows it.
    public var metadata: ImageMetadata {
        ImageMetadata(
            size: size, contentType: contentType, etag: etag, lastModified: lastModified, fetchedAt: fetchedAt)
    }
}
extension DiskCache: DiskCaching {}
