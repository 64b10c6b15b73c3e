import ImgfsModel
import Synchronization

/// Whether someone still wants an answer: a FUSE request withdraws its interest when it is interrupted.
///
/// Guarantees: once withdrawn, always withdrawn; thread safe.
public final class Interest: Sendable {
    private let withdrawn = Atomic<Bool>(false)

    /// An interest not yet withdrawn.
    public init() {}

    /// Whether the asker has gone away.
    public var isWithdrawn: Bool { withdrawn.load(ordering: .acquiring) }

    /// The asker has gone away.
    public func withdraw() { withdrawn.store(true, ordering: .releasing) }
}
