import Foundation
import ImgfsModel
import ImgfsPipeline

/// Statistics in the Prometheus text exposition format (version 0.0.4), for `.imgfs/metrics`.
enum PrometheusText {
    /// The metrics of `statistics`, of the variants when `variants` is given, and the uptime in seconds, one family
    /// after another.
    static func render(
        _ statistics: RepositoryStatistics, variants: VariantCounters? = nil, uptime: TimeInterval
    ) -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Int)]) {
            lines.append("# HELP imgfs_\(name) \(help)")
            lines.append("# TYPE imgfs_\(name) \(type)")
            for sample in samples { lines.append("imgfs_\(name)\(sample.labels) \(sample.value)") }
        }
        let counters = statistics.counters
        metric(
            "cache_hits_total", "counter", "Reads answered from a cache tier.",
            [("{tier=\"memory\"}", statistics.memory.hits), ("{tier=\"disk\"}", counters.diskHits)])
        metric(
            "cache_misses_total", "counter", "Memory cache look-ups that missed.",
            [("{tier=\"memory\"}", statistics.memory.misses)])
        metric(
            "cache_bytes", "gauge", "Bytes held by a cache tier.",
            [("{tier=\"memory\"}", statistics.memoryBytes), ("{tier=\"disk\"}", statistics.diskBytes)])
        metric(
            "cache_entries", "gauge", "Images held by a cache tier.",
            [("{tier=\"memory\"}", statistics.memoryEntries), ("{tier=\"disk\"}", statistics.diskEntries)])
        metric(
            "cache_evictions_total", "counter", "Images evicted to stay within a tier's limit.",
            [("{tier=\"memory\"}", statistics.memory.evictions), ("{tier=\"disk\"}", statistics.diskEvictions)])
        metric("memory_budget_bytes", "gauge", "The memory cache budget.", [("", statistics.memoryBudget)])
        metric(
            "memory_purges_total", "counter", "Memory cache purges (memory pressure, SIGUSR1).",
            [("", statistics.memory.purges)])
        metric(
            "transfers_total", "counter", "Transfers started (fetches and revalidations).", [("", counters.transfers)])
        metric(
            "transfers_joined_total", "counter", "Requests that joined a transfer under way (dedup).",
            [("", counters.joined)])
        metric(
            "transfers_cancelled_total", "counter", "Transfers called off because nobody wanted them any more.",
            [("", counters.cancelled)])
        metric("transfers_in_flight", "gauge", "Transfers under way.", [("", statistics.inFlight)])
        metric(
            "revalidations_total", "counter", "Conditional requests for expired images.", [("", counters.revalidations)]
        )
        metric("not_modified_total", "counter", "Revalidations answered 304.", [("", counters.notModified)])
        metric(
            "stale_served_total", "counter", "Expired copies served because the origin could not be reached.",
            [("", counters.staleServed)])
        metric(
            "errors_total", "counter", "Failed transfers by kind.",
            counters.errorsByKind.sorted { $0.key < $1.key }.map { ("{kind=\"\($0.key)\"}", $0.value) })
        if let shared = statistics.sharedTier { SharedTierCounters.metrics(shared, into: metric) }
        if let variants { VariantCounters.metrics(variants, into: metric) }
        metric("uptime_seconds", "gauge", "Seconds since the mount started.", [("", Int(uptime))])
        return lines.joined(separator: "\n") + "\n"
    }
}
