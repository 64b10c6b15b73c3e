/// How urgently a transfer is wanted; transfers wait for admission by class, most urgent first, FIFO within a class.
///
/// Guarantees: the order is total and fixed: ``waited`` before ``readAhead`` before ``background``.
public enum FetchPriority: Int, Comparable, Sendable, CaseIterable {
    /// Someone waits for it now: an open, a read, a stat or a lookup.
    case waited = 0
    /// Loaded ahead of a viewer stepping through a list; nobody waits for it yet.
    case readAhead = 1
    /// Warming the cache (`imgfs prefetch`); nobody waits for it.
    case background = 2

    /// Whether `lhs` goes before `rhs`: a lower raw value is more urgent.
    public static func < (lhs: FetchPriority, rhs: FetchPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}
