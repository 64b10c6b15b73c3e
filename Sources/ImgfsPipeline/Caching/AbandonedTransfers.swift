import ImgfsModel

/// The URLs whose transfer was called off because nobody wanted it, for a second.
///
/// Readers interrupted together make the kernel send more requests for the name as they die (processes that waited
/// behind the interrupted lookup try it again, and some get their request out before the signal stops them): a
/// transfer such a request starts within ``grace`` of the call-off is held back for ``restartHold`` before it is
/// sent, so the interrupt that follows calls it off unsent.
///
/// Guarantees: thread safe; entries older than ``grace`` are dropped whenever one is added.
final class AbandonedTransfers: Sendable {
    static let grace = Duration.seconds(1)
    /// Seconds a transfer started within ``grace`` is held before it is sent.
    static let restartHold = 0.05

    private let calledOff = Locked<[String: ContinuousClock.Instant]>([:])

    /// `key`'s transfer is being called off (marked before it is, so no lookup can come in between).
    func mark(_ key: String) {
        let now = ContinuousClock.now
        calledOff.withLock { table in
            table = table.filter { now - $0.value < Self.grace }
            table[key] = now
        }
    }

    /// Whether `key`'s transfer was called off less than ``grace`` ago.
    func recently(_ key: String) -> Bool {
        guard let when = calledOff.withLock({ $0[key] }) else { return false }
        return ContinuousClock.now - when < Self.grace
    }
}
