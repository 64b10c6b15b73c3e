import Foundation
import ImgfsModel
import ImgfsStore
import Logging

/// The two cache tiers, memory over disk, seen as one: what is cached under a key, what to list, and emptying them.
/// The images have one; the variants (``VariantStore``) another, over the same write queue.
///
/// Guarantees: nothing here touches the network; ``lookup(_:counting:)`` is the one answer to "what is cached under
/// this key": it finds the memory copy first, then a body this instance queued for the disk (``DiskWriteScheduler``),
/// then the disk entry, and every other question (size, listing, URL of a key) is answered from it, so none of them
/// disagrees about a body held only in the queue; every purge logs what it freed; removing a key removes it from every
/// tier and calls off its queued write, and emptying the disk calls off every write queued for it.
public final class CacheTiers: Sendable {
    /// What `imgfs purge` empties.
    public enum PurgeKind: String, CaseIterable, Sendable {
        /// The memory cache (as memory pressure does).
        case memory
        /// Both caches.
        case disk
        /// Expired images, from both caches.
        case expired
    }

    /// The memory tier.
    public let memory: MemoryCache
    /// The disk tier, when the mount has one.
    public let disk: (any DiskCaching)?
    /// The disk writes queued: a tier between memory and disk until each lands.
    let writes: DiskWriteScheduler
    /// Where bodies read back from the disk are kept in memory.
    private let bodyMemory: BodyMemory
    /// The request rules the URL of a stored entry is named under (its cache key as the mount computes it now).
    package let rules: RequestRulesHolder
    private let logger: Logger

    /// The tiers `memory`, the writes queued in `writes` and `disk`, looked up in that order; bodies read from disk
    /// are held in `bodyMemory`, and keys follow the URLs' request rules in `rules`.
    public init(
        memory: MemoryCache, disk: (any DiskCaching)?, writes: DiskWriteScheduler,
        bodyMemory: BodyMemory = .ordinary, rules: RequestRulesHolder = RequestRulesHolder(), logger: Logger
    ) {
        self.memory = memory
        self.disk = disk
        self.writes = writes
        self.bodyMemory = bodyMemory
        self.rules = rules
        self.logger = logger
    }

    /// What is cached under `key`, and where: the memory cache, else a body queued for its disk write, else the disk
    /// cache (whose record may need a read of its metadata file). `counting` counts a memory hit or miss.
    public func lookup(_ key: String, counting: Bool = false) -> CachedEntry? {
        if let image = counting ? memory.image(forKey: key) : memory.peek(key) { return .memory(image) }
        if let image = writes.queuedImage(forKey: key, tier: ObjectIdentifier(self)) { return .memory(image) }
        return disk?.record(forKey: key).map { .disk($0) }
    }

    /// ``lookup(_:counting:)`` as a source to serve.
    package func source(_ key: String, counting: Bool) -> ImageSource? {
        lookup(key, counting: counting).map(ImageSource.init)
    }

    /// Queues the disk write of `image` as `record` (``DiskWriteScheduler/write(_:as:to:tier:then:)``): until it lands,
    /// ``lookup(_:counting:)`` and ``keys()`` find it. False, queueing nothing, without a disk cache or when the queue
    /// is full.
    func queueWrite(_ image: CachedImage, as record: CacheRecord, then done: @escaping @Sendable () -> Void) -> Bool {
        guard let disk else { return false }
        return writes.write(image, as: record, to: disk, tier: ObjectIdentifier(self), then: done)
    }

    /// The tiers' sizes and counters with the repository's, for `.imgfs/stats.json`.
    func statistics(
        counters: RepositoryCounters, inFlight: Int, sharedTier: SharedTierCounters?
    ) -> RepositoryStatistics {
        RepositoryStatistics(
            counters: counters, memory: memory.counters, memoryBytes: memory.totalBytes,
            memoryEntries: memory.count, memoryBudget: memory.budget,
            diskBytes: disk?.totalBytes ?? 0, diskEntries: disk?.count ?? 0,
            diskEvictions: disk?.evictionCount ?? 0, inFlight: inFlight, sharedTier: sharedTier)
    }

    /// The size of the image cached under `key` (``lookup(_:counting:)``), or nil when none holds it.
    package func cachedSize(_ key: String) -> Int? { lookup(key)?.metadata.size }

    /// Whether a tier holds `key` (``lookup(_:counting:)``, without counting a hit).
    package func holds(_ key: String) -> Bool { lookup(key) != nil }

    /// Bytes `offset ..< offset + count` of the disk entry `record` of `url`: the whole image moves to memory when it
    /// fits the budget, else the range is read from the file. Nil when the entry is unusable (corrupt, gone): it is
    /// then dropped from every tier and the log says why.
    func readFromDisk(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) -> ImageSlice? {
        do {
            return try readEntry(record, of: url, offset: offset, count: count)
        } catch {
            logger.warning(
                "disk cache entry unusable (\(error)); fetching again",
                metadata: ["url": "\(url.withoutFragment)"])
            remove(record.key)
            return nil
        }
    }

    /// What opening a disk entry's file gave.
    enum FileOpening {
        /// The verified file, for the kernel to read by itself.
        case opened(KernelReadableBody)
        /// The entry was unusable (corrupt, gone): it is dropped from every tier, and the log says why.
        case dropped
        /// No file to hand out (a cache without files, or a transient error): reads go through the daemon.
        case unavailable
    }

    /// The body file of the disk entry `record` of `url`, verified (its whole body once per entry and start), without
    /// moving the body into memory.
    func openDiskFile(_ record: CacheRecord, of url: ImageURL) -> FileOpening {
        do {
            guard let file = try disk?.openBody(key: record.key), let body = KernelReadableBody(file, size: record.size)
            else { return .unavailable }
            return .opened(body)
        } catch DiskCacheError.corrupt, DiskCacheError.notFound {
            logger.warning("disk cache entry unusable; fetching again", metadata: ["url": "\(url.withoutFragment)"])
            remove(record.key)
            return .dropped
        } catch {
            logger.warning(
                "cannot open a disk cache entry (\(error)); reading it through imgfs",
                metadata: ["url": "\(url.withoutFragment)"])
            return .unavailable
        }
    }

    private func readEntry(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) throws -> ImageSlice {
        guard let disk else { throw DiskCacheError.notFound(record.key) }
        disk.touch(key: record.key)
        if record.size <= memory.budget {
            let bytes = ImageBytes(copying: try disk.readAll(key: record.key), memory: bodyMemory)
            memory.insert(
                CachedImage(
                    url: url.withoutFragment, bytes: bytes, metadata: record.metadata,
                    expiresAt: record.expiresAt, validatedAt: record.lastValidated,
                    expiryFromHeaders: record.expiryFromHeaders, remoteAddress: record.remoteAddress),
                forKey: record.key)
            return ImageSlice(bytes, size: record.size, offset: offset, count: count)
        }
        let piece = try disk.read(key: record.key, offset: offset, count: count)
        return ImageSlice(bytes: ImageBytes(copying: piece), offset: 0, count: piece.count)
    }

    /// What a 304 renews: the expiry (and whether headers set it), when it was validated, the address it came from
    /// and the ETag (each only when the 304 says).
    struct Renewal {
        var expiresAt: Date
        var validatedAt: Date
        var expiryFromHeaders: Bool?
        var remoteAddress: String?
        var etag: String?
    }

    /// A 304 renewed the cached copy `fallback` of `key`: both tiers get the renewal; a disk copy that fits the budget
    /// comes into memory.
    func renew(_ key: String, fallback: ImageSource, _ renewal: Renewal) {
        if case .disk(let record) = fallback, memory.peek(key) == nil, record.size <= memory.budget,
            let body = try? disk?.readAll(key: key), let url = try? ImageURL(record.url, keying: rules.current)
        {
            memory.insert(
                CachedImage(
                    url: url, bytes: ImageBytes(copying: body, memory: bodyMemory),
                    metadata: record.metadata, expiresAt: renewal.expiresAt,
                    validatedAt: renewal.validatedAt, expiryFromHeaders: renewal.expiryFromHeaders,
                    remoteAddress: renewal.remoteAddress ?? record.remoteAddress), forKey: key)
        }
        memory.update(key) { image in
            image.expiresAt = renewal.expiresAt
            image.validatedAt = renewal.validatedAt
            image.expiryFromHeaders = renewal.expiryFromHeaders
            image.remoteAddress = renewal.remoteAddress ?? image.remoteAddress
            image.metadata.etag = renewal.etag ?? image.metadata.etag
        }
        let stored: CacheRecord?
        if case .disk(let record) = fallback { stored = record } else { stored = disk?.record(forKey: key) }
        if var record = stored {
            record.expiresAt = renewal.expiresAt
            record.validatedAt = renewal.validatedAt
            record.expiryFromHeaders = renewal.expiryFromHeaders
            record.remoteAddress = renewal.remoteAddress ?? record.remoteAddress
            record.etag = renewal.etag ?? record.etag
            try? disk?.update(record)
        }
    }

    func remove(_ key: String) {
        memory.remove(key)
        writes.cancel(key)
        disk?.remove(key: key)
    }

    /// Empties the disk cache and calls off the writes queued for it (the memory cache is left alone).
    func removeAllFromDisk() {
        writes.cancelAll(tier: ObjectIdentifier(self))
        disk?.removeAll()
    }

    /// The keys of every cached entry (memory, queued for the disk, disk), sorted: a snapshot to list in pages.
    public func keys() -> [String] {
        Set(memory.keys).union(writes.queuedKeys(tier: ObjectIdentifier(self))).union(disk?.keys() ?? []).sorted()
    }

    /// The URL cached under `key` (``lookup(_:counting:)``), if any (reads the disk record of that one entry at most).
    public func url(forKey key: String) -> ImageURL? { lookup(key)?.url(keying: rules.current) }

    /// Empties the memory cache (a memory-pressure purge); returns the bytes freed from it.
    @discardableResult
    public func purgeMemory(reason: String) -> Int {
        writes.hurry()
        let freed = memory.purge()
        logger.notice("memory purged (\(reason)): \(Quantity.describe(bytes: freed)) freed from the memory cache")
        return freed
    }

    /// Empties what `kind` names (`now` and `expiry` decide what has expired); logs what was freed.
    public func purge(_ kind: PurgeKind, now: Date, expiry: ExpiryPolicy) {
        switch kind {
        case .memory:
            purgeMemory(reason: "imgfs purge --memory")
        case .disk:
            let (entries, bytes) = (disk?.count ?? 0, disk?.totalBytes ?? 0)
            purgeMemory(reason: "imgfs purge --disk")
            removeAllFromDisk()
            logger.notice("disk cache purged: \(entries) images, \(Quantity.describe(bytes: bytes))")
        case .expired:
            memory.removeAll { expiry.expiry(of: $0) <= now }
            let (entries, bytes) = disk?.sweep(now: now, removeExpiredBefore: now) ?? (0, 0)
            logger.notice("expired images purged: \(entries) from disk (\(Quantity.describe(bytes: bytes)))")
        }
    }
}
