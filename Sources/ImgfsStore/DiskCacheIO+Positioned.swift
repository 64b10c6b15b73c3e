import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reads and writes at an offset, for files of fixed-size records (a list's facts).
///
/// Guarantees: `EINTR` is retried; a read returns fewer bytes only at the end of the file; a write writes all or
/// throws.
extension DiskCacheIO {
    /// Up to `count` bytes at `offset` (fewer at the end of the file).
    package static func read(_ fd: Int32, count: Int, at offset: Int, path: String) throws -> [UInt8] {
        guard count > 0, offset >= 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let done = try bytes.withUnsafeMutableBytes { try readFully(fd, into: $0, offset: offset, path: path) }
        return done == count ? bytes : Array(bytes.prefix(done))
    }

    /// Writes all of `bytes` at `offset`.
    package static func write(_ fd: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws {
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var written = 0
            while written < buffer.count {
                let result = Glibc.pwrite(fd, base + written, buffer.count - written, off_t(offset + written))
                if result > 0 {
                    written += result
                } else if result == 0 {
                    throw DiskCacheSystemError(operation: "write", path: path, code: EIO)
                } else if errno != EINTR {
                    throw DiskCacheSystemError(operation: "write", path: path, code: errno)
                }
            }
        }
    }

    /// The size of the file `fd` in bytes.
    package static func size(of fd: Int32, path: String) throws -> Int {
        Int(try fileStatus(fd, path: path).st_size)
    }
}
