import ImgfsModel
import ImgfsStore

/// An image's complete bytes as a file descriptor, which the adapter may hand to the kernel so that reads of an open
/// file are served from it without the daemon (FUSE passthrough): a body kept whole in file-backed memory, or the
/// body's file in the disk cache.
///
/// Guarantees: the file holds exactly the image's bytes, the ones the open reported the size of, and they never
/// change; the descriptor stays open while this value (or a copy) lives.
public struct KernelReadableBody: Sendable {
    /// The file's descriptor (only to register it; never to read or close).
    public let descriptor: Int32
    /// Keeps the descriptor open: the ``ImageBytes`` or the ``DiskBodyFile`` it belongs to.
    private let owner: any AnyObject & Sendable

    /// What tells two bodies apart.
    public enum Identity: Hashable, Sendable {
        /// Bytes in memory, by their object.
        case memory(ObjectIdentifier)
        /// A disk-cache file, by its device and inode numbers (never written, and not reused while it is open).
        case file(device: UInt64, inode: UInt64)
    }

    /// The same value for two opens that got the same bytes (two opens of one disk-cache file get two descriptors).
    public let identity: Identity

    /// The file of `body`, when it is the whole image of `size` bytes and lives in file-backed memory.
    package init?(_ body: ImageSlice?, size: Int) {
        guard let body, body.offset == 0, body.count == size, let descriptor = body.bytes.completeDescriptor(size: size)
        else { return nil }
        self.descriptor = descriptor
        self.owner = body.bytes
        self.identity = .memory(ObjectIdentifier(body.bytes))
    }

    /// The disk-cache file `file`, when it holds the image of `size` bytes and nothing else.
    init?(_ file: DiskBodyFile, size: Int) {
        guard file.size == size, file.isWholeFile else { return nil }
        self.descriptor = file.descriptor
        self.owner = file
        self.identity = .file(device: file.device, inode: file.inode)
    }
}
