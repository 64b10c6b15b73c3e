import ImgfsModel

/// What the shared tier did, for `.imgfs/stats.json` and `.imgfs/metrics`.
public struct SharedTierCounters: Codable, Equatable, Sendable {
    /// Transfers answered from a complete body in the store.
    public var hits = 0
    /// Transfers that streamed the pieces another mount was publishing.
    public var followed = 0
    /// Transfers for which this mount took the lease and fetched from the origin.
    public var leases = 0
    /// Bodies this mount published complete.
    public var published = 0
    /// Values ignored because they were foreign, stale or corrupt.
    public var rejected = 0
    /// Transfers that went to the origin without the tier (store down, revalidations, policy, timeouts).
    public var bypassed = 0
    /// Store operations that failed or timed out.
    public var errors = 0
    /// Times the store became unusable.
    public var outages = 0
    /// Whether the store is usable now (1) or not (0).
    public var up = 1

    /// All counters at zero, and the store counted up.
    public init() {}
}

extension SharedTierCounters {
    /// Writes the counters as Prometheus metrics through `metric(name, type, help, samples)`.
    package static func metrics(
        _ counters: SharedTierCounters,
        into metric: (String, String, String, [(labels: String, value: Int)]) -> Void
    ) {
        metric(
            "shared_transfers_total", "counter", "Transfers through the shared tier by outcome.",
            [
                ("{outcome=\"hit\"}", counters.hits), ("{outcome=\"followed\"}", counters.followed),
                ("{outcome=\"lease\"}", counters.leases), ("{outcome=\"bypassed\"}", counters.bypassed)
            ])
        metric(
            "shared_published_total", "counter", "Bodies published complete to the shared tier.",
            [("", counters.published)])
        metric(
            "shared_rejected_total", "counter", "Shared-tier values ignored as foreign, stale or corrupt.",
            [("", counters.rejected)])
        metric(
            "shared_errors_total", "counter", "Shared-store operations that failed or timed out.",
            [("", counters.errors)])
        metric("shared_outages_total", "counter", "Times the shared store became unusable.", [("", counters.outages)])
        metric("shared_up", "gauge", "Whether the shared store is usable (1) or not (0).", [("", counters.up)])
    }
}
