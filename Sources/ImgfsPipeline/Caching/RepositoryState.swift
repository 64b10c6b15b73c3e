import Foundation
import ImgfsModel

/// Everything the repository decides under its one lock: the work under way (transfers, and the productions of
/// variants, ``VariantStore``), the failures remembered (of both), what was fetched this session, and the counters.
///
/// Guarantees: none by itself (it is a value); kept in a ``Locked`` by ``ImageRepository`` so that looking for a
/// flight, a remembered failure and a cached copy, and starting a transfer, is one decision.
struct RepositoryState {
    var inFlight = InFlightTable()
    var failures = RememberedFailures()
    /// Keys fetched in this session (for the reload policy).
    var fetchedThisSession: Set<String> = []
    var counters = RepositoryCounters()

    /// A transfer of `key` failed.
    mutating func recordFailure(_ key: String, _ error: FetchError, at date: Date) {
        counters.failures += 1
        counters.errorsByKind[error.kind, default: 0] += 1
        failures.record(key, error, at: date)
    }
}
