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
