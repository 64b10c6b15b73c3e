/// An image's complete bytes as a file descriptor, which the adapter may hand to the kernel so that reads of an open
/// file are served from it without the daemon (FUSE passthrough).
///
/// Guarantees: the file holds exactly the image's bytes, the ones the open reported the size of, and they never
/// change; the descriptor stays open while this value (or a copy) lives.
public struct KernelReadableBody: Sendable {
    /// The file's descriptor (only to register it; never to read or close).
    public let descriptor: Int32
    /// Keeps the descriptor open.
    private let bytes: ImageBytes

    /// The same value for two opens that got the same bytes.
    public var identity: ObjectIdentifier { ObjectIdentifier(bytes) }

    /// The file of `body`, when it is the whole image of `size` bytes and lives in file-backed memory.
    init?(_ body: ImageSlice?, size: Int) {
        guard let body, body.offset == 0, body.count == size, let descriptor = body.bytes.completeDescriptor(size: size)
        else { return nil }
        self.descriptor = descriptor
        self.bytes = body.bytes
    }
}
