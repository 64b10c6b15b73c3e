import Foundation
import ImgfsModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file replacement that failed; `committed` tells whether the rename had already happened (only the directory
/// sync failed), so the new file may or may not survive a crash.
struct DiskCacheCommitFailure: Error {
    let error: DiskCacheError
    let committed: Bool
}

extension DiskCache {
    // MARK: - Storing

    /// Stores `body` under `record.key`, replacing any entry with that key, and returns the record as stored: `size`
    /// is the body's length, `checksum` its CRC-32, `lastAccess` now.
    ///
    /// The body is committed before the record (each through a temporary file, `fsync`, `rename` and a directory
    /// `fsync`), so a crash leaves the old entry or the new one; a body of at most 64 KiB is committed with its record
    /// in one entry file, in one step. Least recently used entries are evicted so that the
    /// total stays within ``sizeLimit``; the new entry is never evicted for that, but a body larger than the limit
    /// is not kept at all (any older entry with its key is removed, and the returned record is not stored).
    ///
    /// `pace` is called before each step of at most ``DiskCacheOptions/paceStep`` bytes of the checksum and of the
    /// body's write, and before its sync; it may wait. The body goes to its temporary file before the write lock is
    /// taken, so such waits hold up no removal or update.
    /// - Throws: ``DiskCacheError/noSpace`` or ``DiskCacheError/io(_:)`` when writing fails (the previous entry, if
    ///   any, is left as it was unless the failure came after the new record was renamed into place, in which case
    ///   neither remains), ``DiskCacheError/invalidKey(_:)`` for a malformed key. No partial file remains.
    @discardableResult
    public func store(_ record: CacheRecord, body: UnsafeRawBufferPointer, pace: () -> Void) throws -> CacheRecord {
        guard let key = DiskCacheKey(record.key) else { throw DiskCacheError.invalidKey(record.key) }
        var stored = record
        stored.size = body.count
        stored.lastAccess = options.now()
        guard body.count <= sizeLimit else {
            stored.checksum = CRC32.checksum(body)
            logger.debug("disk cache: \(body.count) bytes exceed the limit of \(sizeLimit); not kept")
            withWriteLock { _removeFiles(of: withIndex { $0.remove(key) }.map { [$0] } ?? []) }
            return stored
        }
        let single = body.count <= options.singleFileLimit
        let bodyFile: String
        do {
            try _prepareSubdirectory(for: key)
            // One pass over the body: each piece is checksummed and written while it is in the processor's cache.
            (bodyFile, stored.checksum) = try _writeTemporaryFile(
                for: key, finalPath: layout.dataPath(for: key, checksum: 0), bytes: body, pace: pace,
                trailer: single ? { [stored] in try Self.encode(stored, checksum: $0) } : nil)
        } catch let failure as DiskCacheCommitFailure {
            throw failure.error
        }
        if single {
            try withWriteLock { try _commitEntryFile(bodyFile, stored: stored, key: key) }
            return stored
        }
        let dataPath = layout.dataPath(for: key, checksum: stored.checksum)
        let meta: [UInt8]
        do {
            meta = try Self.encode(stored)
        } catch {
            _removeFile(bodyFile)
            throw error
        }
        try withWriteLock {
            let (previous, victims) = withIndex { ($0.entry(key), _makeRoom(for: key, size: body.count, in: &$0)) }
            _removeFiles(of: victims)
            try _writeEntry(stored, key: key, bodyFile: bodyFile, dataPath: dataPath, meta: meta, previous: previous)
            for replaced in _index(stored, key: key) { _removeFile(replaced) }
        }
        return stored
    }

    /// ``store(_:body:)`` for a body in an array.
    @discardableResult
    public func store(_ record: CacheRecord, body: [UInt8]) throws -> CacheRecord {
        try body.withUnsafeBytes { try store(record, body: $0) }
    }

    // MARK: - Updating

    /// Replaces the record of the existing entry `record.key` atomically, without rewriting the body (after a
    /// revalidation answered 304, for example). `size` and `checksum` stay those of the stored body and
    /// `lastAccess` the cache's own; the other fields are taken from `record`.
    /// - Throws: ``DiskCacheError/notFound(_:)`` when there is no such entry, ``DiskCacheError/noSpace`` or
    ///   ``DiskCacheError/io(_:)`` when writing fails (the old record then remains, unless only the final directory
    ///   sync failed: the new record is then in place but may not survive a crash).
    public func update(_ record: CacheRecord) throws {
        guard let key = DiskCacheKey(record.key) else { throw DiskCacheError.invalidKey(record.key) }
        try withWriteLock {
            guard let entry = withIndex({ $0.entry(key) }) else { throw DiskCacheError.notFound(record.key) }
            var updated = record
            updated.size = entry.size
            updated.checksum = entry.checksum
            updated.lastAccess = entry.lastAccess
            let meta = try Self.encode(updated)
            var failure: DiskCacheCommitFailure?
            do {
                try _prepareSubdirectory(for: key)
                if entry.singleFile {
                    try _rewriteEntryFile(entry, record: meta)
                } else {
                    try meta.withUnsafeBytes { try _replaceFile(at: layout.metaPath(for: key), key: key, with: $0) }
                }
            } catch let error as DiskCacheCommitFailure {
                guard error.committed else { throw error.error }
                failure = error
            }
            let loaded = DiskCacheLoadedRecord(updated)
            withIndex {
                $0.modify(key, generation: entry.generation) {
                    $0.loaded = loaded
                    $0.expiresAt = options.expiry(updated)
                }
            }
            if let failure { throw failure.error }
        }
    }

    /// With the write lock held, once the body and the record of `stored` are in place: puts its entry in the index
    /// (verified, its record loaded), and returns the files of the entry it replaced that the new entry does not use,
    /// for the caller to remove once the new entry is safely in place.
    func _index(_ stored: CacheRecord, key: DiskCacheKey, singleFile: Bool = false) -> [String] {
        _indexWithinLimit(stored, key: key, singleFile: singleFile, evicting: false).replaced
    }

    /// ``_index(_:key:singleFile:)``; with `evicting`, in the same step (no reader of the index sees the total over
    /// the limit), the least recently used entries go until the total fits, returned for the caller to remove.
    func _indexWithinLimit(
        _ stored: CacheRecord, key: DiskCacheKey, singleFile: Bool, evicting: Bool
    ) -> (replaced: [String], evicted: [DiskCacheEntry]) {
        let entry = DiskCacheEntry(
            key: key, size: stored.size, checksum: stored.checksum,
            lastAccess: stored.lastAccess, persistedAccess: stored.lastAccess,
            expiresAt: options.expiry(stored), loaded: DiskCacheLoadedRecord(stored), verified: true,
            singleFile: singleFile)
        let (replacedEntry, evicted) = withIndex { index in
            let replaced = index.insert(entry)
            return (replaced, evicting ? _makeRoom(for: nil, size: 0, in: &index) : [])
        }
        guard let replaced = replacedEntry else { return ([], evicted) }
        let kept = Set(layout.files(of: entry))
        return (layout.files(of: replaced).filter { !kept.contains($0) }, evicted)
    }

    // MARK: - Writing files (write lock held, except for the temporary files)

    /// Commits the body (already written and synced to `bodyFile`), then the record, of `stored`; on failure removes
    /// what it wrote, `bodyFile` included.
    private func _writeEntry(
        _ stored: CacheRecord, key: DiskCacheKey, bodyFile: String, dataPath: String,
        meta: [UInt8], previous: DiskCacheEntry?
    ) throws {
        let dataIsNew = previous.map(layout.bodyPath(of:)) != dataPath
        do {
            try _commitTemporaryFile(bodyFile, to: dataPath, key: key)
        } catch let failure as DiskCacheCommitFailure {
            if failure.committed && dataIsNew { _removeFile(dataPath) }
            throw failure.error
        }
        do {
            try meta.withUnsafeBytes { try _replaceFile(at: layout.metaPath(for: key), key: key, with: $0) }
        } catch let failure as DiskCacheCommitFailure {
            if failure.committed {
                // The new record is in place but may not survive a crash: keep neither entry rather than guess.
                _removeFiles(of: withIndex { $0.remove(key) }.map { [$0] } ?? [])
                _removeFile(layout.metaPath(for: key))
                _removeFile(dataPath)
            } else if dataIsNew {
                _removeFile(dataPath)
            }
            throw failure.error
        }
    }

    /// Writes `bytes` to a new temporary file beside `path`, syncs it, renames it to `path` and syncs the directory.
    /// - Throws: ``DiskCacheCommitFailure``; the temporary file is removed whenever the rename did not happen.
    func _replaceFile(at path: String, key: DiskCacheKey, with bytes: UnsafeRawBufferPointer) throws {
        let temporary = try _writeTemporaryFile(for: key, finalPath: path, bytes: bytes, pace: {}).path
        try _commitTemporaryFile(temporary, to: path, key: key)
    }

    /// Writes `bytes` to a new temporary file in the key's subdirectory, then what `trailer` makes of their CRC-32
    /// (an entry file's record), and syncs it (unless `sync` is false: a batch syncs its files together); `pace`
    /// before each step of the write and before the sync. Returns the file's path and the CRC-32 of `bytes`, computed
    /// piece by piece just before each piece is written. Needs no lock: the name is new. (`finalPath` is where it is
    /// going, for the write fault; a body's checksum is not known yet there.)
    /// - Throws: ``DiskCacheCommitFailure`` (not committed); the temporary file is removed.
    func _writeTemporaryFile(
        for key: DiskCacheKey, finalPath: String, bytes: UnsafeRawBufferPointer, pace: () -> Void,
        sync: Bool = true, trailer: ((UInt32) throws -> [UInt8])? = nil
    ) throws -> (path: String, checksum: UInt32) {
        let temporary = layout.temporaryPath(for: key)
        var checksum: UInt32 = 0
        do {
            let fd = try DiskCacheIO.open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                for step in steps(of: bytes) {
                    pace()
                    if let code = options.writeFault?(finalPath) {
                        try DiskCacheIO.writeAll(
                            fd, UnsafeRawBufferPointer(rebasing: step.prefix(step.count / 2)), path: temporary)
                        throw DiskCacheSystemError(operation: "write", path: temporary, code: code)
                    }
                    for piece in Self.cacheSized(step) {
                        checksum = CRC32.update(checksum, with: piece)
                        try DiskCacheIO.writeAll(fd, piece, path: temporary)
                    }
                }
                if let trailer {
                    try trailer(checksum).withUnsafeBytes { try DiskCacheIO.writeAll(fd, $0, path: temporary) }
                }
                if options.durable && sync {
                    pace()
                    try DiskCacheIO.fsync(fd, path: temporary)
                }
            } catch {
                try? DiskCacheIO.close(fd, path: temporary)
                throw error
            }
            try DiskCacheIO.close(fd, path: temporary)
        } catch {
            _removeFile(temporary)
            throw DiskCacheCommitFailure(error: error.diskCacheError, committed: false)
        }
        return (temporary, checksum)
    }

    /// Renames the synced `temporary` file to `path` and syncs the directory.
    /// - Throws: ``DiskCacheCommitFailure``; `temporary` is removed whenever the rename did not happen.
    func _commitTemporaryFile(_ temporary: String, to path: String, key: DiskCacheKey) throws {
        do {
            try DiskCacheIO.rename(temporary, to: path)
        } catch {
            _removeFile(temporary)
            throw DiskCacheCommitFailure(error: error.diskCacheError, committed: false)
        }
        guard options.durable else { return }
        do {
            try DiskCacheIO.fsyncDirectory(layout.subdirectory(for: key))
        } catch {
            throw DiskCacheCommitFailure(error: error.diskCacheError, committed: true)
        }
    }

    /// `bytes` in consecutive pieces of at most ``DiskCacheOptions/paceStep`` bytes.
    private func steps(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        let step = max(1, options.paceStep)
        return stride(from: 0, to: bytes.count, by: step).map {
            UnsafeRawBufferPointer(rebasing: bytes[$0..<min(bytes.count, $0 + step)])
        }
    }

    /// `bytes` in pieces of at most 128 KiB, which stay in the processor's cache between their checksum and their
    /// write.
    private static func cacheSized(_ bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        stride(from: 0, to: bytes.count, by: 1 << 17).map {
            UnsafeRawBufferPointer(rebasing: bytes[$0..<min(bytes.count, $0 + (1 << 17))])
        }
    }

    /// Creates the key's subdirectory (and the layout directory, if someone removed it) when missing.
    func _prepareSubdirectory(for key: DiskCacheKey) throws {
        let subdirectory = layout.subdirectory(for: key)
        do {
            let created: Bool
            do {
                created = try DiskCacheIO.makeDirectory(subdirectory)
            } catch let error as DiskCacheSystemError where error.isMissing {
                try DiskCacheIO.makeDirectories(subdirectory)
                created = true
            }
            if created && options.durable { try DiskCacheIO.fsyncDirectory(layout.root) }
        } catch {
            throw DiskCacheCommitFailure(error: error.diskCacheError, committed: false)
        }
    }

    /// `record` encoded with `checksum` as its body's CRC-32.
    static func encode(_ record: CacheRecord, checksum: UInt32) throws -> [UInt8] {
        var record = record
        record.checksum = checksum
        return try encode(record)
    }

    static func encode(_ record: CacheRecord) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(record))
        } catch {
            throw DiskCacheError.io("cannot encode the record of \(record.key): \(error)")
        }
    }
}
