import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A whole file mapped read-only into memory (a list's file): its pages are read from the page cache as they are
/// touched and can be let go again (``releasePages()``), so a large file costs the process little memory while it is
/// not read.
///
/// Guarantees: the mapping is private and read-only and lives as long as the value; an empty file maps to no bytes.
/// The file must be replaced by rename, never cut short in place, while it is mapped (imgfs writes lists that way).
package final class MappedFile: Sendable {
    /// The mapping's address (0 for an empty file), kept as a number: the mapping never moves or changes.
    private let address: UInt
    private var base: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: address) }
    /// The file's size in bytes when it was mapped.
    package let count: Int

    /// Maps the file at `path`.
    package init(path: String) throws {
        let fd = try DiskCacheIO.open(path, O_RDONLY)
        defer { try? DiskCacheIO.close(fd, path: path) }
        let size = try DiskCacheIO.size(of: fd, path: path)
        count = max(0, size)
        guard count > 0 else {
            address = 0
            return
        }
        guard let mapped = mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED else {
            throw DiskCacheSystemError(operation: "mmap", path: path, code: errno)
        }
        address = UInt(bitPattern: mapped)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), count) }
    }

    /// Calls `body` with the file's bytes.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Lets the pages touched so far go (they are read again from the page cache when next touched).
    package func releasePages() {
        if let base { madvise(UnsafeMutableRawPointer(mutating: base), count, MADV_DONTNEED) }
    }
}
