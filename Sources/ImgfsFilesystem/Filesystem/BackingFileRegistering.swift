import ImgfsModel

/// Registers files with the kernel so that it reads open files from them by itself (FUSE passthrough): the adapter's
/// side of ``OpenDecision``, which keeps the calls into libfuse.
///
/// Guarantees (of an implementation): thread safe; a refusal is reported (logged) by the implementation itself.
public protocol BackingFileRegistering: Sendable {
    /// Whether opens may use passthrough now.
    var isUsable: Bool { get }
    /// Registers the file `descriptor`: its backing id (> 0), or nil when the kernel refused it.
    func register(_ descriptor: Int32) -> Int32?
    /// Drops the registration `backingId` (after the last open file that used it was released).
    func unregister(_ backingId: Int32)
}
