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

// MARK: - DiskCache+Batch

extension DiskCache {
    // MARK: - Storing several bodies at once

    /// One body of a batch, from its temporary files to its commit.
    private struct StagedWrite {
        let position: Int
        let key: DiskCacheKey
        let stored: CacheRecord
        /// The body's temporary file; for a small body, its entry file's (the record follows the body).
        let bodyFile: String
        /// The record's temporary file; nil for an entry file.
        let recordFile: String?
        /// Where `bodyFile` goes.
        var dataPath: String
        var dataIsNew = true
        /// The replaced entry's files that the new entry does not use, removed once the new entry is safely in place.
        var replaced: [String] = []
    }

    /// Stores each body under its record's key as ``store(_:body:pace:)`` does, with the same guarantees (a crash
    /// leaves each entry old or new, never a half file), but with the syncs shared by the whole batch: the bodies and
    /// records go to temporary files, one sync of the file system, the bodies are renamed into place, a second sync,
    /// the records are renamed into place (each entry's commit), a third sync; the bodies of replaced entries are
    /// removed after it. A small body and its record go to one entry file, renamed into place with the records (a
    /// batch of entry files alone skips the second sync, which is for data files). Three syncs at most for the batch
    /// instead of four `fsync`s per entry, which on ext4 cost several times the CPU time of fetching a small image.
    /// Returns each store's result, in order; a body that fails leaves the others alone, a failed sync fails every
    /// body it was for (and leaves the old entries, or, after the records were renamed, neither).
    public func store(batch writes: [DiskCacheWrite]) -> [Result<CacheRecord, any Error>] {
        var results = [Result<CacheRecord, any Error>](
            repeating: .failure(DiskCacheError.io("not stored")), count: writes.count)
        var staged: [StagedWrite] = []
        for (position, write) in writes.enumerated() {
            guard options.durable, write.body.count <= sizeLimit, let key = DiskCacheKey(write.record.key) else {
                results[position] = Result { try store(write.record, body: write.body, pace: {}) }
                continue
            }
            do {
                staged.append(try stage(write.record, key: key, body: write.body, position: position))
            } catch {
                results[position] = .failure(error)
            }
        }
        guard !staged.isEmpty else { return results }
        do {
            try DiskCacheIO.syncFileSystem(holding: layout.root)
        } catch {
            for write in staged {
                _removeFile(write.bodyFile)
                if let recordFile = write.recordFile { _removeFile(recordFile) }
                results[write.position] = .failure(error.diskCacheError)
            }
            return results
        }
        withWriteLock { commit(staged, into: &results) }
        return results
    }

    /// Writes the body and the record of one entry to temporary files, unsynced.
    private func stage(
        _ record: CacheRecord, key: DiskCacheKey, body: UnsafeRawBufferPointer, position: Int
    ) throws -> StagedWrite {
        var stored = record
        stored.size = body.count
        stored.lastAccess = options.now()
        let single = body.count <= options.singleFileLimit
        let bodyFile: String
        do {
            try _prepareSubdirectory(for: key)
            (bodyFile, stored.checksum) = try _writeTemporaryFile(
                for: key, finalPath: layout.dataPath(for: key, checksum: 0), bytes: body, pace: {}, sync: false,
                trailer: single ? { [stored] in try Self.encode(stored, checksum: $0) } : nil)
        } catch let failure as DiskCacheCommitFailure {
            throw failure.error
        }
        if single {
            return StagedWrite(
                position: position, key: key, stored: stored, bodyFile: bodyFile, recordFile: nil,
                dataPath: layout.entryPath(for: key, checksum: stored.checksum, size: stored.size))
        }
        do {
            let meta = try Self.encode(stored)
            let recordFile = try meta.withUnsafeBytes {
                try _writeTemporaryFile(
                    for: key, finalPath: layout.metaPath(for: key), bytes: $0, pace: {}, sync: false)
            }.path
            return StagedWrite(
                position: position, key: key, stored: stored, bodyFile: bodyFile, recordFile: recordFile,
                dataPath: layout.dataPath(for: key, checksum: stored.checksum))
        } catch {
            _removeFile(bodyFile)
            if let failure = error as? DiskCacheCommitFailure { throw failure.error }
            throw error
        }
    }

    /// With the write lock held, the staged files synced: makes room, places the bodies, syncs, commits the records,
    /// syncs, and removes the replaced bodies.
    private func commit(_ staged: [StagedWrite], into results: inout [Result<CacheRecord, any Error>]) {
        let total = staged.reduce(0) { $0 + $1.stored.size }
        _removeFiles(of: withIndex { _makeRoom(for: nil, size: total, in: &$0) })
        var placed: [StagedWrite] = []
        for var write in staged {
            write.dataIsNew = withIndex { $0.entry(write.key) }.map(layout.bodyPath(of:)) != write.dataPath
            guard let recordFile = write.recordFile else {
                placed.append(write)  // an entry file: renamed with the records
                continue
            }
            do {
                try DiskCacheIO.rename(write.bodyFile, to: write.dataPath)
                placed.append(write)
            } catch {
                _removeFile(write.bodyFile)
                _removeFile(recordFile)
                results[write.position] = .failure(error.diskCacheError)
            }
        }
        // Only data files renamed into place need a sync before their records are; entry files were synced whole.
        if placed.contains(where: { $0.recordFile != nil }) {
            guard synced(placed, into: &results, undo: undoPlacement) else { return }
        }
        var committed: [StagedWrite] = []
        var evicted: [DiskCacheEntry] = []
        for var write in placed {
            do {
                if let recordFile = write.recordFile {
                    try DiskCacheIO.rename(recordFile, to: layout.metaPath(for: write.key))
                } else {
                    try DiskCacheIO.rename(write.bodyFile, to: write.dataPath)
                }
            } catch {
                undoPlacement(write)
                results[write.position] = .failure(error.diskCacheError)
                continue
            }
            // Room was made for the batch before it was placed, but a batch larger than the limit still goes in
            // whole: the least recently used entries, the batch's own first ones included, go as each is indexed,
            // so that the total is never over the limit, not even while the sync below runs.
            let indexed = _indexWithinLimit(
                write.stored, key: write.key, singleFile: write.recordFile == nil, evicting: true)
            write.replaced = indexed.replaced
            evicted += indexed.evicted
            committed.append(write)
        }
        _removeFiles(of: evicted)
        // The new records are in place but may not survive a crash if this sync fails: keep neither entry rather
        // than guess, as a single store does.
        guard synced(committed, into: &results, undo: undoCommit) else { return }
        for write in committed {
            for replaced in write.replaced { _removeFile(replaced) }
            results[write.position] = .success(write.stored)
        }
    }

    /// Syncs the file system for `writes`; when that fails, undoes each and records the failure.
    private func synced(
        _ writes: [StagedWrite], into results: inout [Result<CacheRecord, any Error>], undo: (StagedWrite) -> Void
    ) -> Bool {
        guard !writes.isEmpty else { return false }
        do {
            try DiskCacheIO.syncFileSystem(holding: layout.root)
            return true
        } catch {
            for write in writes {
                undo(write)
                results[write.position] = .failure(error.diskCacheError)
            }
            return false
        }
    }

    /// A placed body whose record was not committed: its record's temporary file goes, and its body unless the old
    /// entry has the same one (an entry file not renamed yet: its temporary file goes).
    private func undoPlacement(_ write: StagedWrite) {
        guard let recordFile = write.recordFile else { return _removeFile(write.bodyFile) }
        _removeFile(recordFile)
        if write.dataIsNew { _removeFile(write.dataPath) }
    }

    /// A committed entry whose commit may not survive a crash: the entry and its files go, with the replaced body.
    private func undoCommit(_ write: StagedWrite) {
        _removeFiles(of: withIndex { $0.remove(write.key) }.map { [$0] } ?? [])
        for replaced in write.replaced { _removeFile(replaced) }
    }
}
