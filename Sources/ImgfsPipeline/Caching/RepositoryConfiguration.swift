import Foundation
import ImgfsModel

/// How an ``ImageRepository`` caches: policy, expiry, failure memory, limits, disk-write pacing, body memory.
public struct RepositoryConfiguration: Sendable {
    /// When the caches are asked and when the origin (`--policy`).
    public var policy = CachePolicy.cacheElseLoad
    /// How long a fetched image is fresh.
    public var expiry = ExpiryPolicy()
    /// How long a failed fetch is answered from memory before the origin is asked again.
    public var failureMemory = FailureMemory()
    /// An image the origin vouched for this recently is fresh whatever its expiry, so that one program's lookup,
    /// open and reads see one fetch even of a `no-store` or `max-age=0` image.
    public var minimumFreshness: TimeInterval = 1
    /// What a body must satisfy (size cap, image signature).
    public var limits = Download.Limits()
    /// Hosts whose images are not served, from the network or from the caches (`--allow-host`,
    /// `--deny-private-networks`): a cached image of a host the mount now refuses is refused too.
    public var addressPolicy = AddressPolicy()
    /// The mount's request rules (headers, cookie files, per-host settings, cache-key rules): each request and each
    /// name takes the snapshot in force when it is made. None unless given.
    public var rules = RequestRulesHolder()
    /// When background disk writes wait for readers and transfers.
    public var diskWrites = DiskWriteScheduler.Pacing()
    /// Where image bodies are kept in memory (file-backed ones can be read by the kernel itself).
    public var bodyMemory = BodyMemory.ordinary
    /// The shared tier (`--shared-cache`), when the fetcher goes through one: `cache-only` may then still read it
    /// (never the origin), and its counters join the statistics.
    public var sharedTier: SharedTierFetcher?

    /// The defaults above; the daemon sets each from its options.
    public init() {}
}

/// How long failures are remembered (``RememberedFailures``).
///
/// Guarantees: a value only; ``init(negativeTTL:failureMemory:)`` remembers every failure at least 1 s (one use: its
/// lookup, stat, open and reads see one attempt) and a transient failure never longer than a permanent one.
public struct FailureMemory: Sendable, Equatable {
    /// For 404, 410 and unresolvable hosts (`--negative-ttl`; 1 s when that is 0).
    public var permanent: TimeInterval
    /// For everything else (HTTP 5xx, refused or reset connections, timeouts, bodies that are not images): long
    /// enough that a file manager's repeated stats of a failing URL cost one attempt sequence
    /// (`--tune failure-memory`).
    public var transient: TimeInterval

    /// A memory of `permanent` seconds for permanent failures and `transient` seconds for transient ones.
    public init(permanent: TimeInterval = 60, transient: TimeInterval = 10) {
        self.permanent = permanent
        self.transient = transient
    }

    /// The memory of a mount: `negativeTTL` (`--negative-ttl`) for permanent failures, `failureMemory`
    /// (`--tune failure-memory`) for the others but never longer than `negativeTTL`, and at least 1 s for both (so
    /// `--negative-ttl 0` remembers every failure for one use only).
    public init(negativeTTL: TimeInterval, failureMemory: TimeInterval) {
        let permanent = max(1, negativeTTL)
        self.init(permanent: permanent, transient: min(max(1, failureMemory), permanent))
    }
}
