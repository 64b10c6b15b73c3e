import ImgfsModel

extension DiskCache {
    // MARK: - Entry files: a small body and its record in one file

    /// The most bytes an entry file's record may take after the body.
    static let recordLimit = 1 << 20

    /// With the write lock held: makes room for `stored`, commits its entry file (`temporary`, written and synced:
    /// the body followed by the record) by one rename and a directory sync, puts it in the index, then removes the
    /// files of the entry it replaced.
    /// - Throws: as ``store(_:body:pace:)``: the old entry stays unless only the directory sync failed, in which case
    ///   neither is kept.
    func _commitEntryFile(_ temporary: String, stored: CacheRecord, key: DiskCacheKey) throws {
        let path = layout.entryPath(for: key, checksum: stored.checksum, size: stored.size)
        _removeFiles(of: withIndex { _makeRoom(for: key, size: stored.size, in: &$0) })
        do {
            try _commitTemporaryFile(temporary, to: path, key: key)
        } catch let failure as DiskCacheCommitFailure {
            if failure.committed {
                // The new file is in place but may not survive a crash: keep neither entry rather than guess.
                _removeFiles(of: withIndex { $0.remove(key) }.map { [$0] } ?? [])
                _removeFile(path)
            }
            throw failure.error
        }
        for replaced in _index(stored, key: key, singleFile: true) { _removeFile(replaced) }
    }

    /// With the write lock held: replaces the entry file of `entry` by one with the same body (read back and checked
    /// against its checksum) followed by `record`, through a temporary file and one rename.
    /// - Throws: ``DiskCacheCommitFailure``; `corrupt` when the body on disk does not match the entry.
    func _rewriteEntryFile(_ entry: DiskCacheEntry, record: [UInt8]) throws {
        let path = layout.bodyPath(of: entry)
        let file: [UInt8]
        do {
            file = try readEntryFile(entry)
        } catch {
            throw DiskCacheCommitFailure(error: error.diskCacheError, committed: false)
        }
        let (temporary, checksum) = try file.withUnsafeBytes {
            try _writeTemporaryFile(
                for: entry.key, finalPath: path, bytes: .init(rebasing: $0.prefix(entry.size)), pace: {},
                trailer: { _ in record })
        }
        guard checksum == entry.checksum else {
            _removeFile(temporary)
            throw DiskCacheCommitFailure(error: .corrupt(entry.key.description), committed: false)
        }
        try _commitTemporaryFile(temporary, to: path, key: entry.key)
    }

    /// The record stored after the body in the entry file of `entry` (the file is read whole, so that the body, in the
    /// same blocks, is in the page cache for the read that follows a lookup).
    func readRecordBytes(ofEntryFile entry: DiskCacheEntry) throws -> [UInt8] {
        Array(try readEntryFile(entry)[entry.size...])
    }

    /// The whole entry file of `entry`: its body, then at most ``recordLimit`` bytes of record.
    /// - Throws: `corrupt` when the file does not even hold something after the body.
    private func readEntryFile(_ entry: DiskCacheEntry) throws -> [UInt8] {
        let file = try DiskCacheIO.readSmallFile(layout.bodyPath(of: entry), limit: entry.size + Self.recordLimit)
        guard file.count > entry.size else { throw DiskCacheError.corrupt(entry.key.description) }
        return file
    }
}
