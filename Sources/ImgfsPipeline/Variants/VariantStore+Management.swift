import Foundation
import ImgfsModel

// MARK: - Management: eviction, listing, reports, purges, the disk sweep, counters

extension VariantStore {
    /// Drops the variant from every tier, its queued disk write included (`rm thumb/<px>/<name>`).
    public func evict(_ kind: VariantKind, of url: ImageURL) {
        let key = key(kind, url)
        tiers.remove(key)
        repository.state.withLock { $0.failures.forget(key) }
        logger.info("variant evicted", metadata: ["url": "\(url.withoutFragment)", "variant": "\(kind)"])
    }

    /// The original of `url` got a new body: its variants of every kind are dropped.
    public func originalChanged(_ url: ImageURL) {
        for kind in allKinds {
            let key = Self.uncachedKey(kind, url)
            guard tiers.lookup(key) != nil else { continue }
            tiers.remove(key)
            logger.info(
                "original changed; variant dropped",
                metadata: ["url": "\(url.withoutFragment)", "variant": "\(kind)"])
        }
    }

    /// The URLs of the cached variants listed in `directory` (``VariantKind/directory``; memory, the write queue,
    /// disk), sorted by key, with their keys and kinds.
    public func cachedVariants(_ directory: VariantKind) -> [(key: String, url: ImageURL, kind: VariantKind)] {
        tiers.keys().compactMap { key in
            guard let entry = tiers.lookup(key), let kind = entry.metadata.etag.flatMap(Self.kind(ofValidator:)),
                kind.directory == directory, let url = entry.url(keying: repository.rules.current)
            else { return nil }
            return (key, url, kind)
        }
    }

    /// The last failures of the variants of `url` that are remembered, by kind (for `imgfs why`; never makes
    /// anything).
    public func knownFailures(of url: ImageURL) -> [(kind: VariantKind, error: VariantError)] {
        allKinds.compactMap { kind in
            let key = Self.uncachedKey(kind, url)
            return repository.state.withLock { $0.failures.lastVariantError(key) }.map { (kind, $0) }
        }
    }

    /// What is known about the variant now, without making anything (for extended attributes).
    public func report(
        _ kind: VariantKind, of url: ImageURL
    )
        -> (source: ImageReport.Source?, variant: Variant?, error: VariantError?)
    {
        let key = key(kind, url)
        let error = repository.state.withLock { $0.failures.lastVariantError(key) }
        let cached = cachedVariant(key, counting: false)
        return (cached?.tier, cached, error)
    }

    /// The failure a request for the variant would be answered with now, without a new attempt (never makes
    /// anything): a decoder's failure remembered for the original as it is cached, or, when the original is not
    /// cached, the original's failure while it is remembered. Nil while it is cached or being made.
    public func knownFailure(_ kind: VariantKind, of url: ImageURL) -> VariantError? {
        let key = key(kind, url)
        if cachedVariant(key, counting: false) != nil { return nil }
        let original = repository.tiers.lookup(url.cacheKey)?.metadata
        let now = now()
        let memory = repository.configuration.failureMemory
        return repository.state.withLock { state -> VariantError? in
            if state.inFlight.isProducing(key) { return nil }
            if let original { return state.failures.recent(key, validator: Self.validator(kind, original)) }
            if state.inFlight[url.cacheKey] != nil { return nil }
            return state.failures.recent(url.cacheKey, now: now, memory: memory).map { .original($0) }
        }
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
            tiers.removeAllFromDisk()
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

    /// Waits for the disk writes queued so far (at unmount): the repository's write queue, which variants share.
    public func flushDiskWrites() { tiers.writes.flush() }
}
