#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The body of one disk-cache entry, open read-only, for the kernel to read by itself (``KernelReadableBody``).
///
/// Guarantees: the file held exactly `size` bytes matching the entry's CRC-32 when it was opened (the whole body is
/// checked the first time the entry is opened or read after the cache was opened, and only then); data files are
/// never written after they are committed, so the bytes stay those; the descriptor stays open while this object
/// lives, also after the entry is evicted or replaced (the removed file stays readable through it).
public final class DiskBodyFile: Sendable {
    /// The open file (only to hand to the kernel; never to read, seek or close).
    public let descriptor: Int32
    /// The body's size in bytes.
    public let size: Int
    /// The file's device and inode numbers: the same file for two opens when both match.
    public let device: UInt64
    public let inode: UInt64
    private let path: String

    /// Takes over `descriptor`, open on `path`, whose status is `status`.
    init(descriptor: Int32, status: stat, path: String) {
        self.descriptor = descriptor
        self.size = Int(status.st_size)
        self.device = UInt64(status.st_dev)
        self.inode = UInt64(status.st_ino)
        self.path = path
    }

    deinit { try? DiskCacheIO.close(descriptor, path: path) }
}
