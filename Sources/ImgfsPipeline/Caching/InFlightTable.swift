import ImgfsModel

/// The work under way, one per cache key: what callers join instead of starting another (as Nuke's `TaskPool`).
/// Two kinds share it: transfers of images (by URL key) and productions of variants (by variant key, a distinct
/// SHA-256; ``VariantStore``).
///
/// Guarantees: at most one piece of work per key; a flight is ended only by the download that began it, so a late
/// completion of an earlier download never ends a newer flight of the same key; a production is begun by its first
/// caller, joined by every later one, and ended once, handing back everyone who joined. Not thread-safe by itself: it
/// lives in the repository's locked state, so that looking for work under way, a remembered failure and a cached copy
/// is one decision.
struct InFlightTable {
    /// One transfer and, for a revalidation, the cached copy served on 304 or when the origin cannot be reached.
    struct Flight {
        let download: Download
        let fallback: ImageSource?
        /// The class it waits in for admission (raised when a waiting reader joins).
        var priority: FetchPriority = .waited
    }

    /// A variant being made: the replies of everyone waiting for it.
    struct Production {
        var waiting: [VariantStore.VariantReply]
    }

    private enum Work {
        case transfer(Flight)
        case production(Production)
    }

    private var works: [String: Work] = [:]

    /// The transfer under way for `key`.
    subscript(key: String) -> Flight? {
        guard case .transfer(let flight) = works[key] else { return nil }
        return flight
    }

    /// How many transfers are under way.
    var count: Int {
        works.values.count { if case .transfer = $0 { true } else { false } }
    }

    mutating func begin(_ key: String, _ flight: Flight) {
        works[key] = .transfer(flight)
    }

    /// Raises the flight of `key` to `priority` when it is less urgent; returns whether it was.
    mutating func promote(_ key: String, to priority: FetchPriority) -> Bool {
        guard var flight = self[key], priority < flight.priority else { return false }
        flight.priority = priority
        works[key] = .transfer(flight)
        return true
    }

    mutating func end(_ key: String, _ download: Download) {
        if self[key]?.download === download { works[key] = nil }
    }

    // MARK: - Productions of variants

    /// Adds `reply` to the production of `key`; returns true when none was under way (the caller begins it).
    mutating func join(_ key: String, _ reply: @escaping VariantStore.VariantReply) -> Bool {
        guard case .production(var production) = works[key] else {
            works[key] = .production(Production(waiting: [reply]))
            return true
        }
        works[key] = nil
        production.waiting.append(reply)
        works[key] = .production(production)
        return false
    }

    /// Whether a production of `key` is under way.
    func isProducing(_ key: String) -> Bool {
        if case .production = works[key] { true } else { false }
    }

    /// Ends the production of `key`; returns everyone who waited for it.
    mutating func finishProduction(_ key: String) -> [VariantStore.VariantReply] {
        guard case .production(let production) = works[key] else { return [] }
        works[key] = nil
        return production.waiting
    }
}
