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
