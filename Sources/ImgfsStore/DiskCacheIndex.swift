import Foundation
import ImgfsModel

/// What the disk cache keeps in memory for one entry: about a hundred bytes, plus the record once it was looked up.
struct DiskCacheEntry: Sendable {
    var key: DiskCacheKey
    /// The body's size (from the data file at startup; the record must agree).
    var size: Int
    /// Changes whenever an entry is put in the index, so that work done without the lock can tell whether the entry
    /// it looked at is still the same one.
    var generation: UInt64 = 0
    /// When the entry was last used, for least-recently-used eviction.
    var lastAccess: Date
    /// The last-use time last written to disk (as the data file's modification time).
    var persistedAccess: Date
    /// The record, once read from disk by a lookup; boxed so that entries whose record was never asked for stay small.
    var loaded: DiskCacheLoadedRecord?
    /// The expiry, once known (from the record); kept even when the record itself is not.
    var expiresAt: Date?
    /// The checksum the data file's name carries.
    var checksum: UInt32
    /// Whether the body was checked against its checksum since the cache was opened.
    var verified = false
    /// Whether the body and the record are in one entry file (the body first) rather than a data file and a record.
    var singleFile = false

    init(
        key: DiskCacheKey, size: Int, checksum: UInt32, lastAccess: Date, persistedAccess: Date,
        expiresAt: Date? = nil, loaded: DiskCacheLoadedRecord? = nil, verified: Bool = false, singleFile: Bool = false
    ) {
        self.key = key
        self.size = size
        self.checksum = checksum
        self.lastAccess = lastAccess
        self.persistedAccess = persistedAccess
        self.expiresAt = expiresAt
        self.loaded = loaded
        self.verified = verified
        self.singleFile = singleFile
    }
}

extension DiskCacheEntry {
    /// Whether a file of `fileSize` bytes can hold this entry's body as the entry's file kind does: exactly, or
    /// followed by the record in an entry file.
    func holdsBody(inFileOf fileSize: Int) -> Bool {
        singleFile ? fileSize > size : fileSize == size
    }
}

/// A record kept in memory after its first lookup.
final class DiskCacheLoadedRecord: Sendable {
    let record: CacheRecord

    init(_ record: CacheRecord) { self.record = record }
}

/// The in-memory index: entries by key, in least-recently-used order, with their total size. Not thread safe; the
/// disk cache guards it with its lock. All operations are O(1) except those that copy many entries or keys.
struct DiskCacheIndex {
    private struct Node {
        var entry: DiskCacheEntry?
        var older: Int32 = -1
        var newer: Int32 = -1
    }

    private var nodes: [Node] = []
    private var freeNodes: [Int32] = []
    private var positions: [DiskCacheKey: Int32] = [:]
    /// Least recently used.
    private var oldest: Int32 = -1
    /// Most recently used.
    private var newest: Int32 = -1
    private var nextGeneration: UInt64 = 1

    /// The sum of the entries' sizes.
    private(set) var totalBytes = 0
    /// Entries removed to respect the size limit since the cache was opened.
    var evictionCount = 0

    var count: Int { positions.count }

    init(capacity: Int = 0) {
        nodes.reserveCapacity(capacity)
        positions.reserveCapacity(capacity)
    }

    // MARK: - Lookup

    func entry(_ key: DiskCacheKey) -> DiskCacheEntry? {
        positions[key].flatMap { nodes[Int($0)].entry }
    }

    /// Changes the entry `key` if it still has `generation`; returns whether it did.
    @discardableResult
    mutating func modify(_ key: DiskCacheKey, generation: UInt64, _ change: (inout DiskCacheEntry) -> Void) -> Bool {
        guard let position = positions[key].map(Int.init), nodes[position].entry?.generation == generation else {
            return false
        }
        change(&nodes[position].entry!)
        return true
    }

    /// All keys, in no particular order.
    var keys: Dictionary<DiskCacheKey, Int32>.Keys { positions.keys }

    /// The entries (copies) that satisfy `condition`.
    func entries(where condition: (DiskCacheEntry) -> Bool) -> [DiskCacheEntry] {
        nodes.compactMap { node in node.entry.flatMap { condition($0) ? $0 : nil } }
    }

    // MARK: - Changes

    /// Puts `entry` in as the most recently used one, with a new generation, replacing any entry with its key;
    /// returns the replaced entry.
    @discardableResult
    mutating func insert(_ entry: DiskCacheEntry) -> DiskCacheEntry? {
        let replaced = remove(entry.key)
        var entry = entry
        entry.generation = nextGeneration
        nextGeneration += 1
        let position: Int32
        if let free = freeNodes.popLast() {
            position = free
            nodes[Int(position)] = Node(entry: entry)
        } else {
            position = Int32(nodes.count)
            nodes.append(Node(entry: entry))
        }
        positions[entry.key] = position
        totalBytes += entry.size
        link(position)
        return replaced
    }

    /// Removes and returns the entry `key`.
    @discardableResult
    mutating func remove(_ key: DiskCacheKey) -> DiskCacheEntry? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        unlink(position)
        let entry = nodes[Int(position)].entry
        nodes[Int(position)] = Node()
        freeNodes.append(position)
        totalBytes -= entry?.size ?? 0
        return entry
    }

    /// Removes the entry `key` if it still has `generation`.
    mutating func remove(_ key: DiskCacheKey, generation: UInt64) -> DiskCacheEntry? {
        entry(key)?.generation == generation ? remove(key) : nil
    }

    /// Removes every entry and returns them.
    mutating func removeAll() -> [DiskCacheEntry] {
        let all = nodes.compactMap(\.entry)
        let (evictions, generation) = (evictionCount, nextGeneration)
        self = DiskCacheIndex()
        (evictionCount, nextGeneration) = (evictions, generation)
        return all
    }

    /// Makes `key` the most recently used entry, used at `date`; returns the entry.
    mutating func markUsed(_ key: DiskCacheKey, at date: Date) -> DiskCacheEntry? {
        guard let position = positions[key] else { return nil }
        nodes[Int(position)].entry!.lastAccess = date
        if position != newest {
            unlink(position)
            link(position)
        }
        return nodes[Int(position)].entry
    }

    /// Removes and returns the least recently used entry other than `key`.
    mutating func removeLeastRecent(sparing key: DiskCacheKey?) -> DiskCacheEntry? {
        var position = oldest
        while position >= 0, let entry = nodes[Int(position)].entry {
            if entry.key != key { return remove(entry.key) }
            position = nodes[Int(position)].newer
        }
        return nil
    }

    // MARK: - The use order

    private mutating func link(_ position: Int32) {
        nodes[Int(position)].older = newest
        nodes[Int(position)].newer = -1
        if newest >= 0 { nodes[Int(newest)].newer = position } else { oldest = position }
        newest = position
    }

    private mutating func unlink(_ position: Int32) {
        let older = nodes[Int(position)].older
        let newer = nodes[Int(position)].newer
        if older >= 0 { nodes[Int(older)].newer = newer } else { oldest = newer }
        if newer >= 0 { nodes[Int(newer)].older = older } else { newest = older }
        nodes[Int(position)].older = -1
        nodes[Int(position)].newer = -1
    }
}

// MARK: - DiskCache+Removal

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
