import ImgfsModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The body of one disk-cache entry, open read-only, for the kernel to read by itself (``KernelReadableBody``).
///
/// Guarantees: the file's first `size` bytes matched the entry's CRC-32 when it was opened (the whole body is checked
/// the first time the entry is opened or read after the cache was opened, and only then), and the file holds nothing
/// else when ``isWholeFile`` (a small body shares its entry file with its record, after the body); files are never
/// written after they are committed, so the bytes stay those; the descriptor stays open while this object
/// lives, also after the entry is evicted or replaced (the removed file stays readable through it).
public final class DiskBodyFile: Sendable {
    /// The open file (only to hand to the kernel; never to read, seek or close).
    public let descriptor: Int32
    /// The body's size in bytes.
    public let size: Int
    /// Whether the file is the body and nothing more (false for an entry file, whose record follows the body): only
    /// then may the kernel read it by itself.
    public let isWholeFile: Bool
    /// The file's device and inode numbers: the same file for two opens when both match.
    public let device: UInt64
    /// The file's inode number (see `device`).
    public let inode: UInt64
    private let path: String

    /// Takes over `descriptor`, open on `path`, whose status is `status` and whose first `size` bytes are the body.
    init(descriptor: Int32, size: Int, status: stat, path: String) {
        self.descriptor = descriptor
        self.size = size
        self.isWholeFile = Int(status.st_size) == size
        self.device = UInt64(status.st_dev)
        self.inode = UInt64(status.st_ino)
        self.path = path
    }

    deinit { try? DiskCacheIO.close(descriptor, path: path) }
}
