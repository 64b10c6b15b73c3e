/// The mounted `struct fuse_session *`, for the types that talk to the kernel outside request callbacks
/// (page-cache probes, passthrough backing files, stopping the loop).
///
/// Guarantees: only a wrapper, kept as an address (as ``Request`` keeps its `fuse_req_t`) so that the type is
/// `Sendable` without an unchecked promise: libfuse's `fuse_lowlevel_notify_*` functions, `fuse_session_exit` and the
/// `/dev/fuse` backing ioctls used through it may be called from any thread while the session exists, and
/// ``FuseMount`` stops its holders before it destroys the session.
struct FuseSessionPointer: Sendable {
    private let address: UInt

    init(raw: OpaquePointer) {
        address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(raw)))
    }

    /// The session.
    var raw: OpaquePointer {
        OpaquePointer(bitPattern: address)!
    }
}
