import Glibc
import ImgfsCore

/// ``FileBackedMemory`` in a shared-memory file without a name: a file of imgfs's ``PrivateTmpfs`` (in huge pages)
/// when one is given, an anonymous memfd (`memfd_create`) otherwise. The bytes are written with `pwrite`
/// (half the cost of writing fresh memory, which takes a page fault per page), read through shared mappings of the
/// file, and can be read by the kernel from the file itself. Like the memory of the process they are counted in its
/// RSS (once touched) and its cgroup; unlike the page cache they are not dropped by `drop_caches`.
///
/// Guarantees: each part returned by ``grow(by:)`` is a whole number of pages at the file offset that follows the
/// previous part, mapped until the object is freed; the descriptor is closed when the object is freed (a file the
/// kernel registered stays alive until the kernel lets it go).
public final class SharedMemoryFile: FileBackedMemory, @unchecked Sendable {
    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let closeOnExec: UInt32 = 1  // MFD_CLOEXEC
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    /// memfd_create is not in Swift's Glibc module, so it is looked up at run time (glibc ≥ 2.27), once.
    private static let memfdCreate: MemfdCreate? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "memfd_create")
        .map { unsafeBitCast($0, to: MemfdCreate.self) }

    private let descriptor: Int32
    private var length = 0
    private var mappings: [UnsafeMutableRawBufferPointer] = []

    /// A new empty file in `tmpfs` when given and it makes one, a memfd otherwise; nil when the system refused both.
    public init?(in tmpfs: PrivateTmpfs? = nil) {
        if let descriptor = tmpfs?.makeFile() {
            self.descriptor = descriptor
            return
        }
        guard let create = Self.memfdCreate else { return nil }
        let descriptor = create("imgfs-image", Self.closeOnExec)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit {
        for mapping in mappings { munmap(mapping.baseAddress, mapping.count) }
        close(descriptor)
    }

    public func grow(by byteCount: Int) -> UnsafeMutableRawBufferPointer? {
        let size = (byteCount + Self.pageSize - 1) / Self.pageSize * Self.pageSize
        guard size > 0, ftruncate(descriptor, off_t(length + size)) == 0 else { return nil }
        guard let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(length)),
            address != MAP_FAILED
        else {
            _ = ftruncate(descriptor, off_t(length))
            return nil
        }
        let mapping = UnsafeMutableRawBufferPointer(start: address, count: size)
        mappings.append(mapping)
        length += size
        return mapping
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            done += written
        }
        return true
    }

    public func finish(count: Int) -> Int32? {
        guard count <= length, ftruncate(descriptor, off_t(count)) == 0 else { return nil }
        length = count
        return descriptor
    }

    /// Bodies announced larger than `minimumSize` in files of `tmpfs` (memfds when nil or when it makes none) while
    /// `enabled()` says so, the others in ordinary memory (also when no file could be made).
    public static func bodyMemory(
        largerThan minimumSize: Int, in tmpfs: PrivateTmpfs?, enabled: @escaping @Sendable () -> Bool
    ) -> BodyMemory {
        BodyMemory { expectedCount in
            expectedCount > minimumSize && enabled() ? SharedMemoryFile(in: tmpfs) : nil
        }
    }
}
