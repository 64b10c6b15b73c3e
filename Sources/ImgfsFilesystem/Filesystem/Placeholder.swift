import ImgfsModel
import ImgfsPipeline

/// The image served, with its own size, for any URL that fails (`--placeholder`), and how often it was.
///
/// Guarantees: the bytes never change; ``served`` counts each open answered with them.
public final class Placeholder: Sendable {
    /// The placeholder image.
    public let bytes: ImageBytes
    private let count = Locked(0)

    /// A placeholder serving `bytes`, not yet served.
    public init(bytes: [UInt8]) {
        self.bytes = ImageBytes(copying: bytes)
    }

    /// Opens answered with the placeholder so far.
    public var served: Int { count.withLock { $0 } }

    func markServed() {
        count.withLock { $0 += 1 }
    }
}
