import ImgfsModel

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
