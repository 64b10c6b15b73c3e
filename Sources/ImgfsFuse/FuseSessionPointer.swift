/// The mounted `struct fuse_session *`, for the types that talk to the kernel outside request callbacks
/// (page-cache probes, passthrough backing files).
///
/// Guarantees: only a wrapper. Its Sendable conformance is unchecked because a C pointer is not `Sendable`: libfuse's
/// `fuse_lowlevel_notify_*` functions and the `/dev/fuse` backing ioctls used through it may be called from any thread
/// while the session exists, and ``FuseMount`` stops its holders before it destroys the session.
struct FuseSessionPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
