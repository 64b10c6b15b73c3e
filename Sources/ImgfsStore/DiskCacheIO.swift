import CStoreShims
import Foundation
import ImgfsModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A failed system call: which one, on which path, and its errno. Stays inside the disk cache; the public API turns it
/// into a ``DiskCacheError`` with ``cacheError``.
package struct DiskCacheSystemError: Error, CustomStringConvertible {
    let operation: String
    let path: String
    package let code: Int32

    var isMissing: Bool { code == ENOENT }

    var cacheError: DiskCacheError {
        code == ENOSPC || code == EDQUOT ? .noSpace : .io(description)
    }

    package var description: String { "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))" }
}

extension Error {
    /// The error as the disk cache's public API reports it.
    var diskCacheError: DiskCacheError {
        switch self {
        case let error as DiskCacheError: error
        case let error as DiskCacheSystemError: error.cacheError
        default: .io(String(describing: self))
        }
    }
}

/// Thin wrappers of the system calls the disk cache uses: each checks its result, retries `EINTR` and throws
/// ``DiskCacheSystemError``.
package enum DiskCacheIO {
    // MARK: - Files

    /// Opens `path`, never through a symbolic link (`O_NOFOLLOW`: nothing imgfs keeps in its cache is one).
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws -> Int32 {
        while true {
            let fd = Glibc.open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode)
            if fd >= 0 { return fd }
            let code = errno
            if code != EINTR { throw DiskCacheSystemError(operation: "open", path: path, code: code) }
        }
    }

    /// Closes `fd`. `EINTR` is not retried: on Linux the descriptor is released anyway and a retry could close
    /// another thread's descriptor.
    package static func close(_ fd: Int32, path: String) throws {
        if Glibc.close(fd) != 0, errno != EINTR {
            throw DiskCacheSystemError(operation: "close", path: path, code: errno)
        }
    }

    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        guard let base = bytes.baseAddress else { return }
        var written = 0
        while written < bytes.count {
            let result = Glibc.write(fd, base + written, bytes.count - written)
            if result > 0 {
                written += result
            } else if result == 0 {
                throw DiskCacheSystemError(operation: "write", path: path, code: EIO)
            } else if errno != EINTR {
                throw DiskCacheSystemError(operation: "write", path: path, code: errno)
            }
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at the end of the file.
    static func readFully(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, offset: Int,
        path: String
    ) throws -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let result = Glibc.pread(fd, base + done, buffer.count - done, off_t(offset + done))
            if result > 0 {
                done += result
            } else if result == 0 {
                break
            } else if errno != EINTR {
                throw DiskCacheSystemError(operation: "read", path: path, code: errno)
            }
        }
        return done
    }

    package static func fsync(_ fd: Int32, path: String) throws {
        while Glibc.fsync(fd) != 0 {
            if errno != EINTR { throw DiskCacheSystemError(operation: "fsync", path: path, code: errno) }
        }
    }

    static func fsyncDirectory(_ path: String) throws {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { try? close(fd, path: path) }
        try fsync(fd, path: path)
    }

    /// Writes back everything written to the file system that holds `path` (files, names, the journal) and waits
    /// for it: `syncfs`, one sync for many files.
    static func syncFileSystem(holding path: String) throws {
        let fd = try open(path, O_RDONLY | O_DIRECTORY)
        defer { try? close(fd, path: path) }
        if imgfs_syncfs(fd) != 0 { throw DiskCacheSystemError(operation: "syncfs", path: path, code: errno) }
    }

    static func fileStatus(_ fd: Int32, path: String) throws -> stat {
        var status = stat()
        while fstat(fd, &status) != 0 {
            if errno != EINTR { throw DiskCacheSystemError(operation: "fstat", path: path, code: errno) }
        }
        return status
    }

    /// The status of `name` in the directory `directoryFD`, not following symbolic links.
    static func status(of name: UnsafePointer<CChar>, in directoryFD: Int32, path: String) throws -> stat {
        var status = stat()
        while fstatat(directoryFD, name, &status, AT_SYMLINK_NOFOLLOW) != 0 {
            if errno != EINTR { throw DiskCacheSystemError(operation: "stat", path: path, code: errno) }
        }
        return status
    }

    /// The whole content of a small file (a record), at most `limit` bytes.
    static func readSmallFile(_ path: String, limit: Int = 1 << 20) throws -> [UInt8] {
        let fd = try open(path, O_RDONLY)
        defer { try? close(fd, path: path) }
        let size = Int(try fileStatus(fd, path: path).st_size)
        guard size <= limit else { throw DiskCacheSystemError(operation: "read", path: path, code: EFBIG) }
        var bytes = [UInt8](repeating: 0, count: size)
        let read = try bytes.withUnsafeMutableBytes { try readFully(fd, into: $0, offset: 0, path: path) }
        return Array(bytes.prefix(read))
    }

    // MARK: - Names

    package static func rename(_ source: String, to destination: String) throws {
        while Glibc.rename(source, destination) != 0 {
            if errno != EINTR { throw DiskCacheSystemError(operation: "rename", path: destination, code: errno) }
        }
    }

    /// Removes `path`; a missing file is not an error. Returns whether a file was removed.
    @discardableResult
    package static func unlink(_ path: String) throws -> Bool {
        while Glibc.unlink(path) != 0 {
            let code = errno
            if code == ENOENT { return false }
            if code != EINTR { throw DiskCacheSystemError(operation: "unlink", path: path, code: code) }
        }
        return true
    }

    /// Creates the directory `path` with mode 0700; returns false when it already existed.
    @discardableResult
    static func makeDirectory(_ path: String) throws -> Bool {
        while Glibc.mkdir(path, 0o700) != 0 {
            let code = errno
            if code == EEXIST { return false }
            if code != EINTR { throw DiskCacheSystemError(operation: "mkdir", path: path, code: code) }
        }
        return true
    }

    /// Creates `path` and its missing parents, each with mode 0700.
    static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            try makeDirectory(prefix)
        }
    }

    /// Sets the modification time of `path` (its access time is left alone).
    static func setModificationTime(_ path: String, to date: Date) throws {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let omit = timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)  // UTIME_OMIT
        let time = timespec(
            tv_sec: Int(saturating: seconds), tv_nsec: Int(saturating: (date.timeIntervalSince1970 - seconds) * 1e9))
        let times = [omit, time]
        while utimensat(AT_FDCWD, path, times, 0) != 0 {
            if errno != EINTR { throw DiskCacheSystemError(operation: "utimensat", path: path, code: errno) }
        }
    }

    // MARK: - Directories and locks

    /// Calls `body` with each name in the directory `path` (without "." and ".."), its length and the directory's
    /// descriptor, for `fstatat`. Names must not be removed while the listing runs.
    static func forEachName(
        in path: String,
        _ body: (UnsafePointer<UInt8>, Int, Int32) throws -> Void
    ) throws {
        var directory: OpaquePointer?
        repeat { directory = opendir(path) } while directory == nil && errno == EINTR
        guard let directory else { throw DiskCacheSystemError(operation: "opendir", path: path, code: errno) }
        defer { closedir(directory) }
        let fd = dirfd(directory)
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw DiskCacheSystemError(operation: "readdir", path: path, code: errno) }
                return
            }
            try withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                try tuple.withMemoryRebound(to: UInt8.self, capacity: 256) { name in
                    let length = strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self))
                    if length == 1 && name[0] == UInt8(ascii: ".") { return }
                    if length == 2 && name[0] == UInt8(ascii: ".") && name[1] == UInt8(ascii: ".") { return }
                    try body(name, length, fd)
                }
            }
        }
    }

    /// Applies `operation` (`LOCK_EX`, `LOCK_SH`, with `LOCK_NB`) to `fd`; returns false when a non-blocking
    /// request would have to wait.
    static func flock(_ fd: Int32, _ operation: Int32, path: String) throws -> Bool {
        let lockFile: (Int32, Int32) -> Int32 = Glibc.flock(_:_:)  // the bare name means the struct
        while lockFile(fd, operation) != 0 {
            let code = errno
            if code == EWOULDBLOCK { return false }
            if code != EINTR { throw DiskCacheSystemError(operation: "flock", path: path, code: code) }
        }
        return true
    }
}

extension stat {
    /// The modification time as a `Date`.
    var modificationDate: Date {
        Date(timeIntervalSince1970: Double(st_mtim.tv_sec) + Double(st_mtim.tv_nsec) / 1e9)
    }

    /// The status-change time as a `Date` (a rename sets it, on Linux file systems).
    var changeDate: Date {
        Date(timeIntervalSince1970: Double(st_ctim.tv_sec) + Double(st_ctim.tv_nsec) / 1e9)
    }
}
