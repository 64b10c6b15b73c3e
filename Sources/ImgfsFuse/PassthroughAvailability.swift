import CFuseShims
import Synchronization

/// Whether a mount lets the kernel read large images by itself (FUSE passthrough, Linux 6.9+): it was asked for, the
/// kernel accepted it when the mount started, and the kernel has not refused a registration for lack of privilege.
/// Shared by the mount, which answers opens, and by whoever decides where image bodies are kept (only bodies the
/// kernel can be handed need to live in files).
///
/// Guarantees: false before the mount's INIT has been answered and forever after the first refusal.
public final class PassthroughAvailability: Sendable {
    /// Whether the mount asks the kernel for passthrough.
    public let requested: Bool
    private let refused = Atomic<Bool>(false)

    /// Availability for a mount that asks for passthrough when `requested`; false until the kernel accepts it.
    public init(requested: Bool) {
        self.requested = requested
    }

    /// Whether opens may use passthrough now.
    public var isUsable: Bool {
        requested && imgfs_fuse_passthrough_granted() && !refused.load(ordering: .relaxed)
    }

    /// Records that the kernel refused a registration for lack of privilege; true the first time.
    func markRefused() -> Bool {
        !refused.exchange(true, ordering: .relaxed)
    }
}
