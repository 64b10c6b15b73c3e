import Glibc
import ImgfsModel
import ImgfsPipeline

/// ``FileBackedMemory`` in a shared-memory file without a name: a file of imgfs's ``PrivateTmpfs`` (in pages of
/// 256 KiB or 2 MiB, ``PageSize``) when one is given, an anonymous memfd (`memfd_create`, 4 KiB pages) otherwise. The
/// bytes are written with `pwrite` (half the cost of writing fresh memory, which takes a page fault per page), read
/// through shared mappings of the file, and can be read by the kernel from the file itself. Like the memory of the
/// process they are counted in its RSS (once touched) and its cgroup; unlike the page cache they are not dropped by
/// `drop_caches`.
///
/// Guarantees: each part returned by ``grow(by:)`` is a whole number of pages at the file offset that follows the
/// previous part, mapped until the object is freed; memory is taken for the bytes written (with ``PageSize/large``,
/// up to the end of their last 256 KiB page), never for an announced size alone; the descriptor is closed when the
/// object is freed (a file the kernel registered stays alive until the kernel lets it go).
public final class SharedMemoryFile: FileBackedMemory, @unchecked Sendable {
    private typealias MemfdCreate = @convention(c) (UnsafePointer<CChar>, UInt32) -> Int32
    private static let closeOnExec: UInt32 = 1  // MFD_CLOEXEC
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    /// memfd_create is not in Swift's Glibc module, so it is looked up at run time (glibc ≥ 2.27), once.
    private static let memfdCreate: MemfdCreate? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "memfd_create")
        .map { unsafeBitCast($0, to: MemfdCreate.self) }

    private let descriptor: Int32
    private let pages: PageSize
    /// The bytes mapped so far.
    private var length = 0
    /// With ``PageSize/large``: the bytes allocated so far, the file's size (the mapping beyond it is not written).
    private var allocated = 0
    private var mappings: [UnsafeMutableRawBufferPointer] = []

    /// A new empty file in `tmpfs` with `pages` when given and it makes one, a memfd (``PageSize/small``) otherwise;
    /// nil when the system refused both.
    public init?(in tmpfs: PrivateTmpfs? = nil, pages: PageSize = .large) {
        if pages != .small, let descriptor = tmpfs?.makeFile() {
            self.descriptor = descriptor
            self.pages = pages
            return
        }
        guard let create = Self.memfdCreate else { return nil }
        let descriptor = create("imgfs-image", Self.closeOnExec)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
        self.pages = .small
    }

    /// The pages of the file: a memfd always has ``small`` ones; in a ``PrivateTmpfs`` (`huge=within_size`) the kernel
    /// sizes them by how the file grows (Linux 6.14 and later; before, 4 KiB pages unless ``huge``).
    public enum PageSize: Sendable {
        /// 4 KiB pages: a memfd.
        case small
        /// The file is allocated in pieces of ``largePage`` (`fallocate`) as the bytes come, each just before the first
        /// byte written into it, and the kernel gives each piece one folio of that size: one allocation per 256 KiB
        /// instead of 64, never a huge page.
        case large
        /// Each part joins the file's size before its bytes are written, so the kernel gives whole 2 MiB huge pages.
        case huge
    }

    /// The size of a ``PageSize/large`` page. Measured on Linux 6.18 in a VM that hands free memory back to its host:
    /// 64 KiB to 512 KiB pages kept a body for 0.7–0.8 ms of the machine's CPU per MB (4 KiB pages: 1.1), while 1 MiB
    /// pages, like huge ones, came now and then from memory the host had taken back (each first write then costs a
    /// host fault per 4 KiB: 1.2 ms per MB).
    static let largePage = 256 * 1024

    deinit {
        for mapping in mappings { munmap(mapping.baseAddress, mapping.count) }
        close(descriptor)
    }

    /// Makes the file at least `byteCount` bytes longer (whole pages) and returns the new part, mapped shared; nil when
    /// the system refused.
    public func grow(by byteCount: Int) -> UnsafeMutableRawBufferPointer? {
        let size = (byteCount + Self.pageSize - 1) / Self.pageSize * Self.pageSize
        // A large-page file grows as its bytes are written (the mapping may reach past its end meanwhile).
        guard size > 0, pages == .large || ftruncate(descriptor, off_t(length + size)) == 0 else { return nil }
        guard let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(length)),
            address != MAP_FAILED
        else {
            if pages != .large { _ = ftruncate(descriptor, off_t(length)) }
            return nil
        }
        let mapping = UnsafeMutableRawBufferPointer(start: address, count: size)
        mappings.append(mapping)
        length += size
        return mapping
    }

    /// Writes `bytes` at `offset` with `pwrite` (allocating ``PageSize/large`` pieces first); false when that failed.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard pages != .large || allocate(through: offset + bytes.count) else { return writableMapping() }
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return pages == .large ? writableMapping() : false }
            done += written
        }
        return true
    }

    /// Allocates the file up to `end` rounded up to a multiple of ``largePage`` (at most to the end of the mapping),
    /// one piece of ``largePage`` at a time so that the kernel gives each one folio; false when the system refused.
    private func allocate(through end: Int) -> Bool {
        let target = min(length, (end + Self.largePage - 1) / Self.largePage * Self.largePage)
        while allocated < target {
            let pieceEnd = min(target, (allocated / Self.largePage + 1) * Self.largePage)
            guard posix_fallocate(descriptor, off_t(allocated), off_t(pieceEnd - allocated)) == 0 else { return false }
            allocated = pieceEnd
        }
        return true
    }

    /// After a failed write of a large-page file: extends the file over the whole mapping, so that the caller may copy
    /// into it instead (a copy past the file's end would be a SIGBUS), and returns false. Extending a file costs no
    /// memory and cannot fail on a tmpfs without a size limit.
    private func writableMapping() -> Bool {
        guard ftruncate(descriptor, off_t(length)) == 0 else {
            fatalError("cannot extend a memory file to \(length) bytes: \(String(cString: strerror(errno)))")
        }
        allocated = length
        return false
    }

    /// Unmaps the pages that `part` touches from the process (`MADV_DONTNEED` on a shared mapping keeps the file's
    /// bytes); the pages at its ends may hold bytes of other ranges, which a later access maps again.
    public func releasePages(_ part: UnsafeRawBufferPointer) {
        guard let base = part.baseAddress, !part.isEmpty else { return }
        let page = UInt(Self.pageSize)
        let start = UInt(bitPattern: base) / page * page
        let end = (UInt(bitPattern: base) + UInt(part.count) + page - 1) / page * page
        madvise(UnsafeMutableRawPointer(bitPattern: start), Int(end - start), MADV_DONTNEED)
    }

    /// The bytes of memory the file holds (its allocated blocks), -1 when the system cannot say.
    var heldBytes: Int {
        var status = stat()
        return fstat(descriptor, &status) == 0 ? Int(status.st_blocks) * 512 : -1
    }

    /// Cuts the file to `count` bytes and returns its descriptor, or nil when that failed.
    public func finish(count: Int) -> Int32? {
        guard count <= length, ftruncate(descriptor, off_t(count)) == 0 else { return nil }
        length = count
        return descriptor
    }

    /// Bodies announced larger than `minimumSize` in files of `tmpfs` (memfds when nil or when it makes none) while
    /// `enabled()` says so, the others in ordinary memory (also when no file could be made).
    public static func bodyMemory(
        largerThan minimumSize: Int, in tmpfs: PrivateTmpfs?, pages: PageSize = .large,
        enabled: @escaping @Sendable () -> Bool
    ) -> BodyMemory {
        BodyMemory(largerThan: minimumSize) { _ in
            enabled() ? SharedMemoryFile(in: tmpfs, pages: pages) : nil
        }
    }
}
