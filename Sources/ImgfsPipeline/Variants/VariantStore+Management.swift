import Foundation
import ImgfsModel

// MARK: - Management: eviction, listing, reports, purges, the disk sweep, counters

extension VariantStore {
    /// Drops the variant from both caches (`rm thumb/<px>/<name>`).
    public func evict(_ size: Int, of url: ImageURL) {
        let key = key(size, url)
        memory.remove(key)
        disk?.remove(key: key)
        state.withLock { $0.failures[key] = nil }
        logger.info("variant evicted", metadata: ["url": "\(url.withoutFragment)", "size": "\(size)"])
    }

    /// The original of `url` got a new body: its variants of every size are dropped.
    public func originalChanged(_ url: ImageURL) {
        for size in configuration.sizes {
            let key = key(size, url)
            guard memory.peek(key) != nil || disk?.record(forKey: key) != nil else { continue }
            memory.remove(key)
            disk?.remove(key: key)
            logger.info(
                "original changed; variant dropped",
                metadata: ["url": "\(url.withoutFragment)", "size": "\(size)"])
        }
    }

    /// The URLs of the cached variants of longer side `size`, sorted by key, with their keys.
    public func cachedVariants(_ size: Int) -> [(key: String, url: ImageURL)] {
        Set(memory.keys).union(disk?.keys() ?? []).sorted().compactMap { key in
            let (text, validator) =
                memory.peek(key).map { ($0.url.string, $0.metadata.etag) }
                ?? disk?.record(forKey: key).map { ($0.url, $0.etag) } ?? ("", nil)
            guard validator.flatMap(Self.size(ofValidator:)) == size,
                let url = try? ImageURL(text, keying: repository.rules.current)
            else { return nil }
            return (key, url)
        }
    }

    /// What is known about the variant now, without making anything (for extended attributes).
    public func report(
        _ size: Int, of url: ImageURL
    )
        -> (source: ImageReport.Source?, variant: Variant?, error: VariantError?)
    {
        let key = key(size, url)
        let error = state.withLock { $0.lastErrors[key] }
        switch cachedVariant(key, counting: false) {
        case .memory(let image)?: return (.memory, .memory(image), error)
        case .disk(let record)?: return (.disk, .disk(record), error)
        case nil: return (nil, nil, error)
        }
    }

    /// The last failure of the variant when it is not cached and not being made (never makes anything).
    public func knownFailure(_ size: Int, of url: ImageURL) -> VariantError? {
        let key = key(size, url)
        if cachedVariant(key, counting: false) != nil { return nil }
        return state.withLock { $0.waiting[key] == nil ? $0.lastErrors[key] : nil }
    }

    /// Empties the variants' memory cache (memory pressure); returns the bytes freed.
    @discardableResult
    public func purgeMemory() -> Int { memory.purge() }

    /// Removes from the variants' disk cache the entries that expired before `removeExpiredBefore`, as the disk
    /// sweep does for images (a variant's expiry is its original's), except those whose original's URL `keeping`
    /// accepts (keep-offline); returns what was removed.
    @discardableResult
    public func sweepDisk(
        now: Date, removeExpiredBefore: Date, keeping: (String) -> Bool = { _ in false }
    ) -> (removedEntries: Int, removedBytes: Int) {
        guard let disk else { return (0, 0) }
        let removed = disk.sweep(now: now, removeExpiredBefore: removeExpiredBefore, keeping: keeping)
        counters.withLock { $0.diskEvictions += removed.removedEntries }
        return removed
    }

    /// `imgfs purge`: `memory` empties the variants' memory cache, `disk` both caches, `expired` the expired
    /// variants of both (as for images, by the images' expiry policy on disk).
    public func purge(_ kind: CacheTiers.PurgeKind) {
        switch kind {
        case .memory:
            purgeMemory()
        case .disk:
            purgeMemory()
            disk?.removeAll()
        case .expired:
            let now = now()
            memory.removeAll { $0.expiresAt <= now }
            sweepDisk(now: now, removeExpiredBefore: now)
        }
    }

    /// The counters, with the disk cache's evictions for its size limit.
    public func statistics() -> VariantCounters {
        var counters = counters.withLock { $0 }
        counters.diskEvictions += disk?.evictionCount ?? 0
        return counters
    }

    /// Waits for the disk writes queued so far (at unmount).
    public func flushDiskWrites() { diskWrites.sync {} }
}
