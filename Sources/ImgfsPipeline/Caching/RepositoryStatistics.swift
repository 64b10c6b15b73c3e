import ImgfsModel

/// Counters of the repository itself.
public struct RepositoryCounters: Codable, Equatable, Sendable {
    /// Transfers started (fetches and revalidations).
    public var transfers = 0
    /// Requests that joined a transfer under way.
    public var joined = 0
    /// Conditional requests sent for expired copies.
    public var revalidations = 0
    /// Revalidations answered 304.
    public var notModified = 0
    /// Failed transfers (a transfer called off is not a failure).
    public var failures = 0
    /// Transfers called off because nobody wanted them any more (readers gone, read-ahead given up by a jump).
    public var cancelled = 0
    /// Times an expired copy was served because the origin could not be reached.
    public var staleServed = 0
    /// Reads answered from the disk cache.
    public var diskHits = 0
    /// Bodies not written to disk because the queued writes already held the memory cache's budget.
    public var diskWritesSkipped = 0
    /// Failed transfers by kind of failure (`http_404`, `timeout`, …).
    public var errorsByKind: [String: Int] = [:]
}

/// A snapshot of what the caches hold and what they did, for `.imgfs/stats.json`.
public struct RepositoryStatistics: Codable, Equatable, Sendable {
    /// What the repository itself did: transfers, joins, revalidations, failures (``RepositoryCounters``).
    public var counters: RepositoryCounters
    /// What the memory cache did.
    public var memory: MemoryCache.Counters
    /// Bytes the memory cache holds.
    public var memoryBytes: Int
    /// Images the memory cache holds.
    public var memoryEntries: Int
    /// The memory cache's budget in force, in bytes (lowered under a memory limit).
    public var memoryBudget: Int
    /// Bytes the disk cache holds; 0 without one.
    public var diskBytes: Int
    /// Entries the disk cache holds; 0 without one.
    public var diskEntries: Int
    /// Entries the disk cache evicted since it was opened.
    public var diskEvictions: Int
    /// Transfers under way.
    public var inFlight: Int
    /// The shared tier's counters, when the mount uses one (`--shared-cache`).
    public var sharedTier: SharedTierCounters? = nil
}
