import Foundation
import ImgfsModel

// MARK: - Management: what `rm`, `imgfs purge`, memory pressure, statistics and the xattrs ask of the repository

extension ImageRepository {
    /// A reader of `url` went away (closed its last handle, or was interrupted): the transfer is called off when nobody
    /// wants it any more and less than half of it has arrived (``Download/cancelIfAbandoned(openHandles:)``).
    public func readerGaveUp(_ url: ImageURL, openHandles: Int) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }),
            download.cancelIfAbandoned(openHandles: openHandles, beforeCancelling: { abandoned.mark(url.cacheKey) })
        else { return }
        logger.debug(
            "transfer cancelled: nobody wants it any more and less than half had arrived",
            metadata: ["url": "\(url)"])
    }

    /// Drops `url` from both caches and forgets its failures (`rm` of the file).
    public func evict(_ url: ImageURL) {
        tiers.remove(url.cacheKey)
        state.withLock { $0.failures.forget(url.cacheKey) }
        logger.info("evicted", metadata: ["url": "\(url.withoutFragment)"])
    }

    /// Waits until every disk write queued so far has finished (at unmount, so nothing fetched is lost); writes that
    /// were waiting for a pause or for transfers to end go at once.
    public func flushDiskWrites() { diskWrites.flush() }

    /// Empties what `kind` names (`imgfs purge`); the repository's clock and expiry decide what has expired. Whatever
    /// the kind, remembered transfer failures are forgotten too: the next access of a failed URL tries it again.
    public func purge(_ kind: CacheTiers.PurgeKind) {
        tiers.purge(kind, now: now(), expiry: configuration.expiry)
        state.withLock { $0.failures.forgetTransfers() }
    }

    /// Counters and sizes, for statistics.
    public func statistics() -> RepositoryStatistics {
        let (counters, inFlight) = state.withLock { ($0.counters, $0.inFlight.count) }
        return tiers.statistics(counters: counters, inFlight: inFlight, sharedTier: configuration.sharedTier?.counters)
    }

    /// The last failure of the URL cached under `key`, until it is fetched successfully (for `imgfs why`); never
    /// fetches.
    public func lastError(forKey key: String) -> FetchError? { state.withLock { $0.failures.lastError(key) } }

    /// Why the URL cached under `key` cannot be read now, as far as is known without fetching (for `imgfs why`): its
    /// last failure; else, under `cache-only` without a shared tier, ``FetchError/notCached`` when no cache holds it;
    /// else nil.
    public func knownObstacle(forKey key: String) -> FetchError? {
        if let error = lastError(forKey: key) { return error }
        guard configuration.policy == .cacheOnly, configuration.sharedTier == nil, !tiers.holds(key) else { return nil }
        return .notCached
    }

    /// What is known about `url` now, without fetching anything (for extended attributes).
    public func report(_ url: ImageURL) -> ImageReport {
        let key = url.cacheKey
        let (flight, error) = state.withLock { ($0.inFlight[key], $0.failures.lastError(key)) }
        let cached = tiers.source(key, counting: false)
        let source = cached ?? flight.map { .download($0.download) }
        return ImageReport(
            source: source?.tier, metadata: source?.metadata,
            expiresAt: source.flatMap { freshness.expiry(of: $0, url: url, under: configuration.rules.current) },
            error: error)
    }
}
