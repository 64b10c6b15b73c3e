/// One page of a directory listing as it is filled: entries until a count, or the bytes of a reply, are reached.
///
/// Guarantees: never more than its count; with a reply size, no entry once the entries' cost would pass it (each
/// costs its name's bytes and ``overhead``, at least what FUSE's reply takes: 24 bytes and the name padded to 8), yet
/// always the first entry offered, so a listing never ends early.
struct DirectoryPage {
    /// What an entry costs beside its name's bytes.
    static let overhead = 32

    /// The entries, each with the position after it.
    private(set) var entries: [(entry: DirectoryEntry, next: Int)] = []
    private let limit: Int
    private var bytesLeft: Int

    /// A page of up to `limit` entries, or with `replySize`, of as many as a reply of that many bytes holds.
    init(limit: Int, replySize: Int?) {
        self.limit = replySize.map { max(1, $0 / Self.overhead) } ?? limit
        bytesLeft = replySize ?? Int.max
    }

    /// Whether no entry can be added any more.
    var isFull: Bool { entries.count >= limit || bytesLeft < Self.overhead }

    /// Adds `entry`, followed by position `next`, when it fits; false when it does not (the page is then complete).
    mutating func add(_ entry: DirectoryEntry, next: Int) -> Bool {
        guard entries.count < limit else { return false }
        let cost = entry.name.utf8.count + Self.overhead
        guard cost <= bytesLeft || entries.isEmpty else { return false }
        bytesLeft -= cost
        entries.append((entry, next))
        return true
    }
}
