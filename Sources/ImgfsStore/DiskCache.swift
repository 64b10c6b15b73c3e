import Foundation
import ImgfsModel
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A persistent, size-bounded cache of image bodies and their records, safe against crashes and corruption.
///
/// Guarantees:
/// - **Atomic entries.** ``store(_:body:)`` and ``update(_:)`` write through a temporary file, `fsync`, `rename` and
///   a directory `fsync`; a crash (even `kill -9` or power loss) at any moment leaves the old entry or the new one,
///   never a partial body served as whole. A failed write (`ENOSPC`, `EIO`, …) removes its temporary file and
///   throws, leaving no partial entry.
/// - **Verified reads.** The first read of an entry after the cache was opened checks the whole body against its
///   size and CRC-32; a mismatching, truncated or missing body removes the entry and throws
///   ``DiskCacheError/corrupt(_:)`` so the caller fetches again. Later reads use `pread` without checking again.
/// - **Bounded size.** Bodies total at most `sizeLimit` bytes, least recently used entries are evicted first; the
///   order survives restarts approximately (each entry's last use is written at most about once a minute).
/// - **Fast start.** Opening lists the files and reads their status only: no bodies, no records, no hashing.
///   Leftovers of interrupted writes (temporary files, bodies without a record, records without a body) are removed.
/// - **Thread safety.** Every method may be called from any thread. Reads never wait for another call's disk I/O;
///   changes to the files (store, update, removals) are serialized among themselves.
///
/// The file layout is described at ``DiskCacheLayout``. Several instances may share a directory (each holds a
/// shared `flock` on `v1/lock`; only an instance that is alone at startup removes young leftovers), but their size
/// accounting is separate, so the limit is only kept for the files each one wrote.
public final class DiskCache: Sendable {
    // MARK: - State

    /// The most bytes of bodies the cache keeps.
    public let sizeLimit: Int
    let layout: DiskCacheLayout
    let logger: Logger
    let options: DiskCacheOptions
    /// The index, behind its lock: never held during disk I/O, and never taken before `writeLock` by a holder of it.
    private let index: Locked<DiskCacheIndex>
    /// Serializes changes to the files, so that a key's files and its index entry change together.
    private let writeLock = Locked(())
    /// Holds the shared `flock` on `v1/lock` for the life of the instance.
    private let lockFD: Int32

    // MARK: - Opening

    /// Opens (creating it, and its parents, with mode 0700 when missing) the cache in `directory`, keeping at most
    /// `sizeLimit` bytes of bodies. Builds the index from file names and statuses only, removes leftovers of
    /// interrupted writes, and evicts least recently used entries if the files exceed `sizeLimit`. `expiry` says when a
    /// record stops being fresh, for sweeps (by default its stored `expiresAt`).
    /// - Throws: ``DiskCacheError`` when the directory cannot be created or listed.
    public convenience init(
        directory: URL, sizeLimit: Int, logger: Logger,
        expiry: @escaping @Sendable (CacheRecord) -> Date = { $0.expiresAt }
    ) throws {
        var options = DiskCacheOptions()
        options.expiry = expiry
        try self.init(directory: directory, sizeLimit: sizeLimit, logger: logger, options: options)
    }

    init(directory: URL, sizeLimit: Int, logger: Logger, options: DiskCacheOptions) throws {
        let layout = DiskCacheLayout(directory: directory.path)
        var lockFD: Int32 = -1
        do {
            try DiskCacheIO.makeDirectories(layout.root)
            lockFD = try DiskCacheIO.open(layout.lockPath, O_RDWR | O_CREAT, mode: 0o600)
            let exclusive = (try? DiskCacheIO.flock(lockFD, LOCK_EX | LOCK_NB, path: layout.lockPath)) ?? false
            if !exclusive { _ = try? DiskCacheIO.flock(lockFD, LOCK_SH, path: layout.lockPath) }
            let scan = try DiskCacheScanner(layout: layout, exclusive: exclusive, now: options.now(), logger: logger)
                .scan()
            if exclusive { _ = try? DiskCacheIO.flock(lockFD, LOCK_SH, path: layout.lockPath) }
            var index = DiskCacheIndex(capacity: scan.entries.count)
            for entry in scan.entries { index.insert(entry) }
            self.index = Locked(index)
            if scan.removedFiles > 0 {
                logger.info("disk cache: removed \(scan.removedFiles) leftover files of interrupted writes")
            }
        } catch {
            if lockFD >= 0 { try? DiskCacheIO.close(lockFD, path: layout.lockPath) }
            throw error.diskCacheError
        }
        self.layout = layout
        self.sizeLimit = max(0, sizeLimit)
        self.logger = logger
        self.options = options
        self.lockFD = lockFD
        let victims = withWriteLock { withIndex { _makeRoom(for: nil, size: 0, in: &$0) } }
        withWriteLock { _removeFiles(of: victims) }
        logger.debug("disk cache opened", metadata: ["entries": "\(count)", "bytes": "\(totalBytes)"])
    }

    deinit {
        try? DiskCacheIO.close(lockFD, path: layout.lockPath)
    }

    // MARK: - Locks

    /// Runs `body` with the index lock held. `body` must not do disk I/O or take `writeLock`.
    @discardableResult
    func withIndex<Result>(_ body: (inout DiskCacheIndex) throws -> Result) rethrows -> Result {
        try index.withLock(body)
    }

    /// Runs `body` with the write lock held: no other change to the files runs meanwhile.
    func withWriteLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        try writeLock.withLock { _ in try body() }
    }

    // MARK: - Statistics

    /// The sum of the sizes of the bodies kept (records not counted); at most ``sizeLimit`` after every call.
    public var totalBytes: Int { withIndex { $0.totalBytes } }

    /// The number of entries.
    public var count: Int { withIndex { $0.count } }

    /// The number of entries evicted to respect ``sizeLimit`` since the cache was opened.
    public var evictionCount: Int { withIndex { $0.evictionCount } }

    // MARK: - Lookup

    /// All keys, sorted: a snapshot for paged listings, whose pages are then looked up with ``record(forKey:)``.
    public func keys() -> [String] {
        let keys = withIndex { Array($0.keys) }
        return keys.sorted().map(\.description)
    }

    /// The record of the entry `key`, or nil when there is none. The record is read from disk the first time and
    /// then kept in memory; one that does not match its files is treated as corrupt (the entry is removed, nil is
    /// returned). `lastAccess` is the cache's own. The body is not verified here; ``read(key:offset:count:)`` does.
    public func record(forKey key: String) -> CacheRecord? {
        guard let parsed = DiskCacheKey(key) else { return nil }
        do {
            return try loadRecordIfPresent(parsed)?.record
        } catch {
            if case .io = error.diskCacheError {
                logger.warning("disk cache: cannot read the record of \(key): \(error)")
            }
            return nil
        }
    }

    // MARK: - Use

    /// Marks the entry `key` as used now, for least-recently-used eviction. Does disk I/O (setting the body file's
    /// modification time, so the order survives restarts) at most about once a minute per entry. Unknown keys are
    /// ignored.
    public func touch(key: String) {
        if let key = DiskCacheKey(key) { markUsed(key) }
    }

    /// Marks `key` used now, persisting the time when the last persisted one is older than the interval.
    func markUsed(_ key: DiskCacheKey) {
        let now = options.now()
        let bodyPath: String? = withIndex { index in
            guard let entry = index.markUsed(key, at: now),
                abs(now.timeIntervalSince(entry.persistedAccess)) >= options.accessPersistInterval
            else { return nil }
            index.modify(key, generation: entry.generation) { $0.persistedAccess = now }
            return layout.bodyPath(of: entry)
        }
        guard let bodyPath else { return }
        do {
            try DiskCacheIO.setModificationTime(bodyPath, to: now)
        } catch let error as DiskCacheSystemError where error.isMissing {
            return  // removed meanwhile
        } catch {
            logger.debug("disk cache: cannot record the last use of \(key): \(error)")
        }
    }
}
