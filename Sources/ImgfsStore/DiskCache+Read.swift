import CStoreShims
import Foundation
import ImgfsModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension DiskCache {
    // MARK: - Reading

    /// Up to `count` bytes of the body of `key` from `offset`, fewer at the end of the body (none from or past it),
    /// and marks the entry used.
    ///
    /// The first read of an entry after the cache was opened checks the whole body against its size and CRC-32.
    /// - Throws: ``DiskCacheError/corrupt(_:)`` when the body or its record is damaged, truncated or missing (the
    ///   entry has then been removed: fetch again), ``DiskCacheError/notFound(_:)`` when there is no entry,
    ///   ``DiskCacheError/io(_:)`` for other system errors, ``DiskCacheError/invalidArgument(_:)`` for a negative
    ///   offset or count.
    public func read(key text: String, offset: Int, count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0 else {
            throw DiskCacheError.invalidArgument("offset \(offset) and count \(count) must not be negative")
        }
        guard let key = DiskCacheKey(text) else { throw DiskCacheError.notFound(text) }
        for _ in 0..<3 {
            guard let (fd, entry, record, path) = try openDataFile(key) else { continue }
            defer { try? DiskCacheIO.close(fd, path: path) }
            let start = min(offset, record.size)
            let length = min(count, record.size - start)
            var verified = entry.verified
            if !verified && (start > 0 || length < record.size) {
                guard try checksumMatches(fd, entry, path: path) else {
                    if discardCorrupt(entry, reason: "its body does not match its checksum") {
                        throw DiskCacheError.corrupt(text)
                    }
                    continue
                }
                verified = true
            }
            let bytes = try [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
                initialized = try DiskCacheIO.readFully(
                    fd, into: UnsafeMutableRawBufferPointer(buffer),
                    offset: start, path: path)
            }
            var intact = bytes.count == length
            if intact && !verified {
                let fileSize = Int(try DiskCacheIO.fileStatus(fd, path: path).st_size)
                intact = entry.holdsBody(inFileOf: fileSize) && CRC32.checksum(bytes) == record.checksum
            }
            guard intact else {
                try discardDamaged(entry)
                continue
            }
            accepted(entry)
            return bytes
        }
        throw DiskCacheError.notFound(text)
    }

    /// The whole body of `key` (verified as ``read(key:offset:count:)`` describes), and marks the entry used.
    public func readAll(key: String) throws -> [UInt8] {
        try read(key: key, offset: 0, count: Int.max)
    }

    /// The body of `key` open read-only, for the kernel to read by itself; verified as ``read(key:offset:count:)``
    /// describes (the whole body once per entry after the cache was opened, its size at every open), and marks the
    /// entry used.
    /// Never nil (the optional is the ``DiskCaching`` requirement's, for caches that keep no files).
    /// - Throws: as ``read(key:offset:count:)``.
    public func openBody(key text: String) throws -> DiskBodyFile? {
        guard let key = DiskCacheKey(text) else { throw DiskCacheError.notFound(text) }
        for _ in 0..<3 {
            guard let (fd, entry, record, path) = try openDataFile(key) else { continue }
            let file: DiskBodyFile
            do {
                let status = try DiskCacheIO.fileStatus(fd, path: path)
                guard entry.holdsBody(inFileOf: Int(status.st_size)) else {
                    try? DiskCacheIO.close(fd, path: path)
                    try discardDamaged(entry)
                    continue
                }
                file = DiskBodyFile(descriptor: fd, size: entry.size, status: status, path: path)
            } catch {
                try? DiskCacheIO.close(fd, path: path)
                throw error.diskCacheError
            }
            guard file.size == record.size, try entry.verified || checksumMatches(fd, entry, path: path) else {
                try discardDamaged(entry)
                continue
            }
            accepted(entry)
            return file
        }
        throw DiskCacheError.notFound(text)
    }

    /// The entry `key`, its record and its data file opened read-only (the caller closes it); nil when the file
    /// vanished because the entry was replaced or removed meanwhile (look again).
    /// - Throws: as ``loadRecord(_:)``; ``DiskCacheError/corrupt(_:)`` when the entry is still there without its body
    ///   (it is then removed).
    private func openDataFile(
        _ key: DiskCacheKey
    ) throws -> (fd: Int32, entry: DiskCacheEntry, record: CacheRecord, path: String)? {
        let (entry, record) = try loadRecord(key)
        let path = layout.bodyPath(of: entry)
        do {
            return (try DiskCacheIO.open(path, O_RDONLY), entry, record, path)
        } catch let error as DiskCacheSystemError where error.isMissing {
            if discardCorrupt(entry, reason: "its body is missing") { throw DiskCacheError.corrupt(key.description) }
            return nil
        } catch {
            throw error.diskCacheError
        }
    }

    /// Drops `entry`, whose body is truncated or does not match its checksum.
    /// - Throws: ``DiskCacheError/corrupt(_:)`` when it was still the entry in the index (else: look again).
    private func discardDamaged(_ entry: DiskCacheEntry) throws {
        if discardCorrupt(entry, reason: "its body is truncated or does not match its checksum") {
            throw DiskCacheError.corrupt(entry.key.description)
        }
    }

    /// `entry`'s body was found intact: remembered as verified (until the cache is opened again) and marked used.
    private func accepted(_ entry: DiskCacheEntry) {
        if !entry.verified {
            withIndex { $0.modify(entry.key, generation: entry.generation) { $0.verified = true } }
        }
        markUsed(entry.key)
    }

    // MARK: - Records

    /// The entry `key` and its record, read from disk and kept in the index if not yet there.
    /// - Throws: `notFound`, `corrupt` (the entry is then removed) or `io` (a transient failure: the entry stays).
    func loadRecord(_ key: DiskCacheKey) throws -> (entry: DiskCacheEntry, record: CacheRecord) {
        guard let loaded = try loadRecordIfPresent(key) else { throw DiskCacheError.notFound(key.description) }
        return loaded
    }

    /// As ``loadRecord(_:)``, with nil where that throws `notFound`: a miss (every cold lookup asks) costs one index
    /// lookup and no error text.
    func loadRecordIfPresent(_ key: DiskCacheKey) throws -> (entry: DiskCacheEntry, record: CacheRecord)? {
        for _ in 0..<3 {
            guard let entry = withIndex({ $0.entry(key) }) else { return nil }
            if let loaded = entry.loaded {
                var record = loaded.record
                record.lastAccess = entry.lastAccess
                return (entry, record)
            }
            let record: CacheRecord
            do {
                record = try readRecord(entry)
            } catch let error as DiskCacheSystemError where !error.isMissing {
                throw error.cacheError
            } catch {
                if discardCorrupt(entry, reason: "its record is missing or unreadable (\(error))") {
                    throw DiskCacheError.corrupt(key.description)
                }
                continue
            }
            let loaded = DiskCacheLoadedRecord(record)
            withIndex {
                $0.modify(key, generation: entry.generation) {
                    $0.loaded = loaded
                    $0.expiresAt = options.expiry(record)
                }
            }
            var result = record
            result.lastAccess = entry.lastAccess
            return (entry, result)
        }
        return nil
    }

    /// The record file of `entry`, decoded and checked against the entry's files (key, checksum, size).
    func readRecord(_ entry: DiskCacheEntry) throws -> CacheRecord {
        let bytes =
            entry.singleFile
            ? try readRecordBytes(ofEntryFile: entry) : try DiskCacheIO.readSmallFile(layout.metaPath(for: entry.key))
        let record = try CacheRecordParser.decode(bytes)
        guard record.key == entry.key.description, record.checksum == entry.checksum, record.size == entry.size else {
            throw DiskCacheError.corrupt(entry.key.description)
        }
        return record
    }

    // MARK: - Verification

    /// Whether the file open as `fd` has the entry's size and checksum; reads it in pieces.
    private func checksumMatches(_ fd: Int32, _ entry: DiskCacheEntry, path: String) throws -> Bool {
        guard entry.holdsBody(inFileOf: Int(try DiskCacheIO.fileStatus(fd, path: path).st_size)) else { return false }
        var buffer = [UInt8](repeating: 0, count: min(entry.size, 1 << 18))
        var checksum: UInt32 = 0
        var offset = 0
        while offset < entry.size {
            let piece = min(buffer.count, entry.size - offset)
            let read = try buffer.withUnsafeMutableBytes {
                try DiskCacheIO.readFully(
                    fd, into: UnsafeMutableRawBufferPointer(rebasing: $0.prefix(piece)),
                    offset: offset, path: path)
            }
            guard read == piece else { return false }
            checksum = buffer.withUnsafeBytes {
                CRC32.update(checksum, with: .init(rebasing: $0.prefix(piece)))
            }
            offset += piece
        }
        return checksum == entry.checksum
    }

    /// Removes `entry` (if it is still the one in the index) and its files; returns whether it did.
    @discardableResult
    func discardCorrupt(_ entry: DiskCacheEntry, reason: String) -> Bool {
        let removed = withWriteLock {
            guard let removed = withIndex({ $0.remove(entry.key, generation: entry.generation) }) else { return false }
            _removeFiles(of: [removed])
            return true
        }
        if removed { logger.warning("disk cache: removed entry \(entry.key): \(reason)") }
        return removed
    }
}

// MARK: - DiskCacheIO

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

// MARK: - CRC32

/// CRC-32 as in zlib, PNG and Ethernet (reflected polynomial 0xEDB88320): the checksum of the disk cache's bodies and
/// of the shared tier's pieces. One implementation, in C (CStoreShims): folds with the processor's carry-less
/// multiplication where it has it, a byte table otherwise.
///
/// Guarantees: `checksum(of: "123456789")` is 0xCBF43926; feeding a body piece by piece (``update(_:with:)``) gives
/// the value of feeding it at once.
public enum CRC32 {
    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, with: bytes)
    }

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// Extends `crc`, the CRC-32 of earlier bytes (0 for none), with `bytes`.
    package static func update(_ crc: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return imgfs_crc32_update(crc, base, bytes.count)
    }

    /// Whether the processor's carry-less multiplication is used.
    public static var isAccelerated: Bool { imgfs_crc32_accelerated() != 0 }
}
