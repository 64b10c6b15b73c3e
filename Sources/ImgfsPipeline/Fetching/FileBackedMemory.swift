import ImgfsModel

/// Memory for one image's bytes that is also a file, so that the kernel can read the bytes from it by itself (FUSE
/// passthrough) instead of asking the daemon for every range.
///
/// What an implementation guarantees: memory returned by ``grow(by:)`` stays mapped, holding the file's bytes at the
/// offsets that follow the previous parts, until the object is freed; after ``finish(count:)`` the file is exactly
/// `count` bytes long.
public protocol FileBackedMemory: AnyObject, Sendable {
    /// Makes the file at least `byteCount` bytes longer and returns the new part, mapped; nil when the system refused
    /// (the caller then uses ordinary memory).
    func grow(by byteCount: Int) -> UnsafeMutableRawBufferPointer?

    /// Writes `bytes` at `offset` of the file (inside the parts grown so far) through the file rather than the
    /// mapping, which costs a page fault per page; false when that failed (the caller then writes to the mapping).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool

    /// The pages of `part` (inside memory returned by ``grow(by:)``) leave the process's memory; the file keeps their
    /// bytes, and the next access maps them again. A range read from the mapping for a reader is let go at once, so
    /// that what imgfs serves through its own reads is not counted twice (in the file and in the process).
    func releasePages(_ part: UnsafeRawBufferPointer)

    /// Cuts the file to the image's `count` bytes and returns its descriptor, or nil when that failed. Called once,
    /// when every byte has arrived; nothing grows afterwards.
    func finish(count: Int) -> Int32?
}
