/// What a resolution may start when no copy of the image is cached and no transfer of it runs, and what it does to a
/// probe under way (``ImageRepository/probeBytes``).
///
/// Guarantees: only ``whole`` asks a probe under way (or ended after its first bytes) for the rest; ``none`` starts no
/// new transfer at all (a cached copy that has expired is still revalidated).
public enum TransferStart: Sendable, Equatable {
    /// Someone reads the image (an open, a read, read-ahead): a whole GET, and a probe it finds is continued.
    case whole
    /// Someone wants its size and first bytes only (a stat, `ls -l`): a GET of the first bytes.
    case probe
    /// Someone names it and may read it or stat it next (a lookup that does not wait): nothing new is started, so
    /// what comes next (an open, or a stat) decides between a whole GET and a probe.
    case none
}
