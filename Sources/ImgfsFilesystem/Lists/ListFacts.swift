import Foundation
import ImgfsModel
import ImgfsStore

/// The facts file of one list (`<cache>/lists/<name>.facts`): one ``EntryFacts`` record of
/// ``EntryFacts/recordSize`` bytes per entry, at the entry's position in the list; entries never looked at are holes.
///
/// Guarantees: a record is read back only for the URL it was written for (``EntryFacts/init(record:urlText:)``), so a
/// list replaced under the file, or a file cut short, answers "unknown", never another entry's facts; records are
/// written in place with one `pwrite` each, so readers in other processes see the old record or the new one; a file
/// that cannot be opened or written makes every entry unknown (the error is not the caller's).
public final class ListFacts: Sendable {
    /// The file.
    public let path: String
    private let writable: Bool
    /// The open file, once it exists.
    private let descriptor = Locked<Int32?>(nil)
    /// How many records this object has written.
    private let writes = Locked<UInt64>(0)

    /// Changes with every record this object writes, once the record is in the file: what was rendered from the facts
    /// at one version (read before rendering) is current while the version stays. Other objects' writes are not
    /// counted.
    public var version: UInt64 { writes.withLock { $0 } }

    /// The facts at `path`; `writable`: recording makes the file when it is missing (at the first record, so a list
    /// nothing was learnt of has no facts file).
    public init(path: String, writable: Bool) {
        self.path = path
        self.writable = writable
    }

    deinit {
        if let fd = descriptor.withLock({ $0 }) { try? DiskCacheIO.close(fd, path: path) }
    }

    /// The open file; nil while it does not exist (made first when `create`).
    private func file(create: Bool = false) -> Int32? {
        descriptor.withLock { fd in
            if let fd { return fd }
            let flags = writable ? O_RDWR : O_RDONLY
            fd =
                (try? DiskCacheIO.open(path, flags))
                ?? (create && writable ? try? DiskCacheIO.open(path, O_RDWR | O_CREAT, mode: 0o600) : nil)
            return fd
        }
    }

    /// The file of the list called `name` in `directory`.
    public static func path(of name: String, in directory: URL) -> String {
        directory.appendingPathComponent(name + ".facts").path
    }

    /// The facts of the entry at `index` whose URL text is `urlText`, or nil when none are known.
    public func facts(at index: Int, urlText: String) -> EntryFacts? {
        guard index >= 0, index < Int.max / EntryFacts.recordSize, let fd = file() else { return nil }
        let size = EntryFacts.recordSize
        guard let record = try? DiskCacheIO.read(fd, count: size, at: index * size, path: path) else { return nil }
        return EntryFacts(record: record, urlText: urlText)
    }

    /// The facts of the entries at `positions`, read with one `pread` (a listing's page): by position, for the records
    /// written (``facts(at:urlText:)`` checks each against `urlText(position)`, asked only of positions with a record).
    /// Empty when there is no facts file.
    public func facts(in positions: Range<Int>, urlText: (Int) -> String) -> [Int: EntryFacts] {
        let size = EntryFacts.recordSize
        guard !positions.isEmpty, positions.lowerBound >= 0, positions.upperBound < Int.max / size, let fd = file(),
            let bytes = try? DiskCacheIO.read(
                fd, count: positions.count * size, at: positions.lowerBound * size, path: path)
        else { return [:] }
        var found: [Int: EntryFacts] = [:]
        for (offset, start) in stride(from: 0, to: bytes.count - size + 1, by: size).enumerated() {
            let record = bytes[start..<(start + size)]
            // An entry never looked at is a hole: its URL's hash (never 0) is missing.
            guard record.prefix(8).contains(where: { $0 != 0 }) else { continue }
            let position = positions.lowerBound + offset
            if let facts = EntryFacts(record: record, urlText: urlText(position)) { found[position] = facts }
        }
        return found
    }

    /// Records `facts` for the entry at `index` whose URL text is `urlText`; false when it could not be written.
    @discardableResult
    public func record(_ facts: EntryFacts, at index: Int, urlText: String) -> Bool {
        guard index >= 0, index < Int.max / EntryFacts.recordSize, let fd = file(create: true) else { return false }
        let size = EntryFacts.recordSize
        defer { writes.withLock { $0 &+= 1 } }
        return (try? DiskCacheIO.write(fd, facts.encoded(urlText: urlText), at: index * size, path: path)) != nil
    }

    /// The raw record at `index` (for moving facts to a replaced list's new positions).
    public func rawRecord(at index: Int) -> [UInt8]? {
        guard index >= 0, index < Int.max / EntryFacts.recordSize, let fd = file() else { return nil }
        let size = EntryFacts.recordSize
        guard let record = try? DiskCacheIO.read(fd, count: size, at: index * size, path: path), record.count == size,
            record.prefix(8).contains(where: { $0 != 0 })
        else { return nil }
        return record
    }

    /// Writes a raw record read by ``rawRecord(at:)`` at `index`.
    public func writeRaw(_ record: [UInt8], at index: Int) {
        guard record.count == EntryFacts.recordSize, index >= 0, index < Int.max / record.count,
            let fd = file(create: true)
        else { return }
        try? DiskCacheIO.write(fd, record, at: index * record.count, path: path)
        writes.withLock { $0 &+= 1 }
    }
}
