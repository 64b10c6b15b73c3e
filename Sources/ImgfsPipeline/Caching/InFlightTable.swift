import ImgfsModel

/// The transfers under way, one per URL key: what callers join instead of starting another (as Nuke's `TaskPool`).
///
/// Guarantees: at most one flight per key; a flight is ended only by the download that began it, so a late
/// completion of an earlier download never ends a newer flight of the same key. Not thread-safe by itself: it lives
/// in the repository's locked state, so that looking for a flight, a remembered failure and a cached copy is one
/// decision.
struct InFlightTable {
    /// One transfer and, for a revalidation, the cached copy served on 304 or when the origin cannot be reached.
    struct Flight {
        let download: Download
        let fallback: ImageSource?
        /// The class it waits in for admission (raised when a waiting reader joins).
        var priority: FetchPriority = .waited
    }

    private var flights: [String: Flight] = [:]

    subscript(key: String) -> Flight? { flights[key] }

    var count: Int { flights.count }

    mutating func begin(_ key: String, _ flight: Flight) {
        flights[key] = flight
    }

    /// Raises the flight of `key` to `priority` when it is less urgent; returns whether it was.
    mutating func promote(_ key: String, to priority: FetchPriority) -> Bool {
        guard let flight = flights[key], priority < flight.priority else { return false }
        flights[key]?.priority = priority
        return true
    }

    mutating func end(_ key: String, _ download: Download) {
        if flights[key]?.download === download { flights[key] = nil }
    }
}
