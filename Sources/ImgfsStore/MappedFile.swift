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
package final class MappedFile: @unchecked Sendable {
    private let base: UnsafeRawPointer?
    /// The file's size in bytes when it was mapped.
    package let count: Int

    /// Maps the file at `path`.
    package init(path: String) throws {
        let fd = try DiskCacheIO.open(path, O_RDONLY)
        defer { try? DiskCacheIO.close(fd, path: path) }
        let size = try DiskCacheIO.size(of: fd, path: path)
        count = max(0, size)
        guard count > 0 else {
            base = nil
            return
        }
        guard let address = mmap(nil, count, PROT_READ, MAP_PRIVATE, fd, 0), address != MAP_FAILED else {
            throw DiskCacheSystemError(operation: "mmap", path: path, code: errno)
        }
        base = UnsafeRawPointer(address)
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
