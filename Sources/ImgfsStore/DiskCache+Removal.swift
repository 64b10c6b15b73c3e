import Foundation
import ImgfsModel

extension DiskCache {
    // MARK: - Removing

    /// Removes the entry `key` and its files, if there is one.
    public func remove(key: String) {
        guard let key = DiskCacheKey(key) else { return }
        withWriteLock {
            _removeFiles(of: withIndex { $0.remove(key) }.map { [$0] } ?? [])
        }
    }

    /// Removes every entry and its files. Changes to the files by other calls wait meanwhile.
    public func removeAll() {
        withWriteLock {
            _removeFiles(of: withIndex { $0.removeAll() })
        }
    }

    // MARK: - Sweeping

    /// Removes the entries that expired before `removeExpiredBefore` (callers keep recently expired entries for
    /// revalidation or stale-if-error; `.distantPast` removes none and reads no record) and temporary files more
    /// than a minute older than `now`; returns how many
    /// entries, and how many bytes of bodies, were removed. Entries whose record is damaged are removed too (not
    /// counted).
    ///
    /// Meant for a background queue: records not read yet are read a batch at a time with no lock held, and
    /// entries are removed a batch at a time, so other calls are held up only briefly.
    public func sweep(now: Date, removeExpiredBefore: Date) -> (removedEntries: Int, removedBytes: Int) {
        sweep(now: now, removeExpiredBefore: removeExpiredBefore, keeping: { _ in false })
    }

    /// ``sweep(now:removeExpiredBefore:)``, except that an entry whose URL `keeping` accepts (a policy rule's
    /// keep-offline) is never removed for its age.
    public func sweep(
        now: Date, removeExpiredBefore: Date,
        keeping: (String) -> Bool
    ) -> (removedEntries: Int, removedBytes: Int) {
        removeTemporaryFiles(olderThan: now.addingTimeInterval(-60))
        guard removeExpiredBefore > .distantPast else { return (0, 0) }
        learnExpiries()
        let expired = withIndex { index in
            index.entries { $0.expiresAt.map { $0 < removeExpiredBefore } ?? false }
        }.filter { candidate in (try? readRecord(candidate)).map { !keeping($0.url) } ?? true }
        var removedEntries = 0
        var removedBytes = 0
        for start in stride(from: 0, to: expired.count, by: 64) {
            withWriteLock {
                let removed = withIndex { index in
                    expired[start..<min(start + 64, expired.count)].compactMap { candidate -> DiskCacheEntry? in
                        guard let entry = index.entry(candidate.key), entry.generation == candidate.generation,
                            let expiresAt = entry.expiresAt, expiresAt < removeExpiredBefore
                        else { return nil }
                        return index.remove(entry.key)
                    }
                }
                _removeFiles(of: removed)
                removedEntries += removed.count
                removedBytes += removed.reduce(0) { $0 + $1.size }
            }
        }
        if removedEntries > 0 {
            logger.debug("disk cache: swept \(removedEntries) expired entries, \(removedBytes) bytes")
        }
        return (removedEntries, removedBytes)
    }

    /// Reads the expiry of every entry whose record was not read yet (keeping the expiry only, not the record).
    private func learnExpiries() {
        let unknown = withIndex { index in index.entries { $0.expiresAt == nil } }
        for start in stride(from: 0, to: unknown.count, by: 256) {
            var learned: [(key: DiskCacheKey, generation: UInt64, expiresAt: Date)] = []
            var damaged: [DiskCacheEntry] = []
            for entry in unknown[start..<min(start + 256, unknown.count)] {
                do {
                    let record = try readRecord(entry)
                    learned.append((entry.key, entry.generation, options.expiry(record)))
                } catch let error as DiskCacheSystemError where !error.isMissing {
                    logger.debug("disk cache: cannot read the record of \(entry.key): \(error)")
                } catch {
                    damaged.append(entry)
                }
            }
            withIndex { index in
                for item in learned {
                    index.modify(item.key, generation: item.generation) { $0.expiresAt = item.expiresAt }
                }
            }
            for entry in damaged { discardCorrupt(entry, reason: "its record is missing or unreadable") }
        }
    }

    /// Removes temporary files last modified before `date` (leftovers of writes interrupted by a crash).
    private func removeTemporaryFiles(olderThan date: Date) {
        var subdirectories: [String] = []
        do {
            try DiskCacheIO.forEachName(in: layout.root) { name, length, _ in
                guard DiskCacheLayout.isSubdirectoryName(name, length: length) else { return }
                subdirectories.append(String(decoding: UnsafeBufferPointer(start: name, count: length), as: UTF8.self))
            }
        } catch {
            logger.warning("disk cache: cannot list \(layout.root): \(error)")
        }
        for subdirectory in subdirectories {
            let path = layout.subdirectory(named: subdirectory)
            var stale: [String] = []
            do {
                try DiskCacheIO.forEachName(in: path) { name, length, directoryFD in
                    guard DiskCacheLayout.parse(name, length: length) == .temporary else { return }
                    let status = try? name.withMemoryRebound(to: CChar.self, capacity: length + 1) {
                        try DiskCacheIO.status(of: $0, in: directoryFD, path: path)
                    }
                    guard let status, status.modificationDate < date else { return }
                    stale.append(String(decoding: UnsafeBufferPointer(start: name, count: length), as: UTF8.self))
                }
            } catch {
                logger.warning("disk cache: cannot list \(path): \(error)")
            }
            for name in stale { _removeFile(path + "/" + name) }
        }
    }

    // MARK: - Eviction and file removal (locks held)

    /// With the index lock held: evicts least recently used entries other than `key` until the entries, with `key`
    /// then `size` bytes large, fit in ``sizeLimit``; returns them (their files are still to be removed).
    func _makeRoom(for key: DiskCacheKey?, size: Int, in index: inout DiskCacheIndex) -> [DiskCacheEntry] {
        var projected = index.totalBytes - (key.flatMap { index.entry($0)?.size } ?? 0) + size
        var victims: [DiskCacheEntry] = []
        while projected > sizeLimit, let victim = index.removeLeastRecent(sparing: key) {
            projected -= victim.size
            victims.append(victim)
        }
        index.evictionCount += victims.count
        return victims
    }

    /// With the write lock held: removes the files of `entries`, already taken out of the index (the record first,
    /// so that an interrupted removal leaves a body without a record, which the next start removes).
    func _removeFiles(of entries: [DiskCacheEntry]) {
        for entry in entries {
            for path in layout.files(of: entry) { _removeFile(path) }
        }
    }

    /// Removes one file, logging (not throwing) a failure; a missing file is fine.
    func _removeFile(_ path: String) {
        do {
            try DiskCacheIO.unlink(path)
        } catch {
            logger.warning("disk cache: cannot remove \(path): \(error)")
        }
    }
}
