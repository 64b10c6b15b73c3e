import Foundation

// MARK: - Management: what `rm`, `imgfs purge`, memory pressure, statistics and the xattrs ask of the repository

extension ImageRepository {
    /// A reader of `url` went away (closed its last handle, or was interrupted): the transfer is called off when nobody
    /// wants it any more and less than half of it has arrived (``Download/cancelIfAbandoned(openHandles:)``).
    public func readerGaveUp(_ url: ImageURL, openHandles: Int) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }),
              download.cancelIfAbandoned(openHandles: openHandles) else { return }
        logger.info("transfer cancelled: nobody wants it any more and less than half had arrived",
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
    public func flushDiskWrites() {
        diskWrites.flush()
    }

    /// Counters and sizes, for statistics.
    public func statistics() -> RepositoryStatistics {
        let (counters, inFlight) = state.withLock { ($0.counters, $0.inFlight.count) }
        return RepositoryStatistics(counters: counters, memory: memory.counters, memoryBytes: memory.totalBytes,
                                    memoryEntries: memory.count, memoryBudget: memory.budget,
                                    diskBytes: disk?.totalBytes ?? 0, diskEntries: disk?.count ?? 0,
                                    diskEvictions: disk?.evictionCount ?? 0, inFlight: inFlight)
    }

    /// The failure remembered for `url` (within its failure memory) when no cached copy exists, with the size the
    /// failed response had announced (nil when it never got that far); never fetches.
    public func knownFailure(_ url: ImageURL) -> (error: FetchError, announcedSize: Int?)? {
        guard !tiers.holds(url.cacheKey) else { return nil }
        return state.withLock { $0.knownFailure(url.cacheKey, now: now(), memory: configuration.failureMemory) }
    }

    /// What is known about `url` now, without fetching anything (for extended attributes).
    public func report(_ url: ImageURL) -> ImageReport {
        let key = url.cacheKey
        let (flight, error) = state.withLock { ($0.inFlight[key], $0.failures.lastError(key)) }
        if let image = memory.peek(key) {
            return ImageReport(source: .memory, metadata: image.metadata, expiresAt: image.expiresAt, error: error)
        }
        if let record = disk?.record(forKey: key) {
            return ImageReport(source: .disk, metadata: record.metadata, expiresAt: record.expiresAt, error: error)
        }
        if let flight {
            return ImageReport(source: .network, metadata: flight.download.currentMetadata, expiresAt: nil, error: error)
        }
        return ImageReport(source: nil, metadata: nil, expiresAt: nil, error: error)
    }
}
