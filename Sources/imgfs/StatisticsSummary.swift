import ImgfsModel

/// The short human summary `imgfs stats` prints from a mount's stats.json: hits and misses per tier, transfers,
/// bytes, failures by kind, lists, hosts, variants and the shared tier, one topic a line.
///
/// Guarantees: a pure value of the parsed JSON; a section the mount does not have (no lists, no thumbnails, no shared
/// tier) is left out, and a missing number reads as 0, so a document from an older daemon still prints.
struct StatisticsSummary {
    /// stats.json, as JSONSerialization parsed it.
    let document: [String: Any]
    /// The mount point, for the first line.
    let mountPoint: String

    /// The summary, each line ending in a newline.
    var text: String {
        let repository = document["repository"] as? [String: Any] ?? [:]
        let counters = repository["counters"] as? [String: Any] ?? [:]
        let memory = repository["memory"] as? [String: Any] ?? [:]
        var lines = [
            "imgfs on \(mountPoint) (pid \(Self.int(document["pid"])), up "
                + "\(ProgressLine.clock(Double(Self.int(document["uptime_seconds"])))))",
            "memory:     \(Self.int(memory["hits"])) hits, \(Self.int(memory["misses"])) misses; "
                + "\(Self.images(repository["memory_entries"])), \(Self.bytes(repository["memory_bytes"])) "
                + "of \(Self.bytes(repository["memory_budget"])); \(Self.int(memory["evictions"])) evicted, "
                + "\(Self.int(memory["purges"])) purges",
            "disk:       \(Self.int(counters["disk_hits"])) hits; \(Self.images(repository["disk_entries"])), "
                + "\(Self.bytes(repository["disk_bytes"])); \(Self.int(repository["disk_evictions"])) evicted",
            "transfers:  \(Self.int(counters["transfers"])) started, \(Self.int(counters["joined"])) joined, "
                + "\(Self.int(repository["in_flight"])) in flight, \(Self.int(counters["cancelled"])) called off; "
                + "\(Self.int(counters["revalidations"])) revalidations (\(Self.int(counters["not_modified"])) not "
                + "modified), \(Self.int(counters["stale_served"])) stale copies served",
            "failures:   \(Self.failures(Self.int(counters["failures"]), counters["errors_by_kind"]))"
        ]
        let lists = document["lists"] as? [[String: Any]] ?? []
        for (index, list) in lists.enumerated() {
            let c = list["counters"] as? [String: Any] ?? [:]
            lines.append(
                (index == 0 ? "lists:      " : "            ") + "\(list["name"] as? String ?? "?"): "
                    + "\(Self.opens(c)); read-ahead \(Self.int(c["started"])) started = \(Self.int(c["used"])) used "
                    + "+ \(Self.int(c["wasted"])) wasted + \(Self.int(c["pending"])) pending")
        }
        let hosts = document["hosts"] as? [[String: Any]] ?? []
        for (index, host) in hosts.enumerated() {
            let c = host["counters"] as? [String: Any] ?? [:]
            lines.append(
                (index == 0 ? "hosts:      " : "            ") + "\(host["host"] as? String ?? "?"): \(Self.opens(c))")
        }
        if let variants = document["variants"] as? [String: Any] {
            let failed = (variants["failures"] as? [String: Any] ?? [:]).values.reduce(0) { $0 + Self.int($1) }
            lines.append(
                "variants:   \(Self.int(variants["made"])) made, \(Self.int(variants["served_from_memory"])) reads "
                    + "from memory, \(Self.int(variants["served_from_disk"])) from disk; "
                    + "failures: \(Self.failures(failed, variants["failures"]))")
        }
        if let shared = repository["shared_tier"] as? [String: Any] {
            lines.append(
                "shared:     \(Self.int(shared["up"]) == 1 ? "up" : "down"); \(Self.int(shared["hits"])) hits, "
                    + "\(Self.int(shared["followed"])) followed, \(Self.int(shared["published"])) published, "
                    + "\(Self.int(shared["bypassed"])) bypassed, \(Self.int(shared["errors"])) errors, "
                    + "\(Self.int(shared["outages"])) outages")
        }
        lines.append("(every counter: imgfs stats --json; their meaning: docs/SEMANTICS.md)")
        return lines.map { $0 + "\n" }.joined()
    }

    private static func int(_ value: Any?) -> Int {
        (value as? Int) ?? (value as? Double).map { Int($0) } ?? 0
    }

    private static func bytes(_ value: Any?) -> String { Quantity.describe(bytes: int(value)) }

    private static func images(_ value: Any?) -> String { int(value) == 1 ? "1 image" : "\(int(value)) images" }

    /// `opens (hits, misses), bytes` of a list or host.
    private static func opens(_ counters: [String: Any]) -> String {
        "\(int(counters["opens"])) opens (\(int(counters["hits"])) hits, \(int(counters["misses"])) misses), "
            + bytes(counters["bytes"])
    }

    /// `none`, or `3 (http_404 2, timeout 1)`.
    private static func failures(_ total: Int, _ byKind: Any?) -> String {
        let kinds = (byKind as? [String: Any] ?? [:]).map { ($0.key, int($0.value)) }.filter { $0.1 > 0 }
        guard total > 0 || !kinds.isEmpty else { return "none" }
        let listed = kinds.sorted { $0.0 < $1.0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        return listed.isEmpty ? "\(total)" : "\(total) (\(listed))"
    }
}
