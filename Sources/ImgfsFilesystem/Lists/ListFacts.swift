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
    private let fd: Int32?

    /// The facts at `path`; `writable` creates the file when it is missing.
    public init(path: String, writable: Bool) {
        self.path = path
        fd = try? DiskCacheIO.open(path, writable ? O_RDWR | O_CREAT : O_RDONLY, mode: 0o600)
    }

    deinit {
        if let fd { try? DiskCacheIO.close(fd, path: path) }
    }

    /// The file of the list called `name` in `directory`.
    public static func path(of name: String, in directory: URL) -> String {
        directory.appendingPathComponent(name + ".facts").path
    }

    /// The facts of the entry at `index` whose URL text is `urlText`, or nil when none are known.
    public func facts(at index: Int, urlText: String) -> EntryFacts? {
        guard let fd, index >= 0, index < Int.max / EntryFacts.recordSize else { return nil }
        let size = EntryFacts.recordSize
        guard let record = try? DiskCacheIO.read(fd, count: size, at: index * size, path: path) else { return nil }
        return EntryFacts(record: record, urlText: urlText)
    }

    /// Records `facts` for the entry at `index` whose URL text is `urlText`; false when it could not be written.
    @discardableResult
    public func record(_ facts: EntryFacts, at index: Int, urlText: String) -> Bool {
        guard let fd, index >= 0, index < Int.max / EntryFacts.recordSize else { return false }
        let size = EntryFacts.recordSize
        return (try? DiskCacheIO.write(fd, facts.encoded(urlText: urlText), at: index * size, path: path)) != nil
    }

    /// The raw record at `index` (for moving facts to a replaced list's new positions).
    public func rawRecord(at index: Int) -> [UInt8]? {
        guard let fd, index >= 0, index < Int.max / EntryFacts.recordSize else { return nil }
        let size = EntryFacts.recordSize
        guard let record = try? DiskCacheIO.read(fd, count: size, at: index * size, path: path), record.count == size,
            record.prefix(8).contains(where: { $0 != 0 })
        else { return nil }
        return record
    }

    /// Writes a raw record read by ``rawRecord(at:)`` at `index`.
    public func writeRaw(_ record: [UInt8], at index: Int) {
        guard let fd, record.count == EntryFacts.recordSize, index >= 0, index < Int.max / record.count else { return }
        try? DiskCacheIO.write(fd, record, at: index * record.count, path: path)
    }
}
