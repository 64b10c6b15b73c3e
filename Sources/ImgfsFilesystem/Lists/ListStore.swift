import Foundation
import ImgfsModel
import ImgfsStore

/// The lists kept under the cache directory (`<cache>/lists/<name>.list`), shared by the daemon (which reads them)
/// and `imgfs list` (which writes them).
///
/// Guarantees: a list is written whole (a temporary file renamed over the old one), so a reader sees the old list or
/// the new one; a list written by another process is seen by the next lookup in `lists/`, by the next opening of its
/// directory, and otherwise within ``recheckInterval``; names are checked by ``validate(_:)``.
public final class ListStore: Sendable {
    /// Why a list name is refused.
    public struct InvalidName: Error, CustomStringConvertible {
        /// Why, in one line.
        public let description: String
    }

    /// How long a loaded list is trusted before its file's modification time is looked at again.
    public static let recheckInterval: TimeInterval = 0.2
    static let suffix = ".list"

    /// `<cache>/lists`, where the list files are.
    public let directory: URL
    private let loaded = Locked<[String: (list: ImageList, stamp: Date?, checked: Date, facts: ListFacts?)]>([:])
    /// Whether this store records what it learns of entries (the daemon's does; a command's only reads).
    public let writesFacts: Bool

    /// The lists in `directory`, which need not exist yet; nothing is read until a list is looked up. With
    /// `writesFacts`, each list's facts file is opened for writing (and made when missing) as the list is loaded.
    public init(directory: URL, writesFacts: Bool = false) {
        self.directory = directory
        self.writesFacts = writesFacts
    }

    /// Refuses names that are empty, over 200 bytes, `.`/`..`, or hold `/`, NUL, control characters or a leading dot.
    public static func validate(_ name: String) throws(InvalidName) {
        if name.isEmpty { throw InvalidName(description: "a list name cannot be empty") }
        if name.utf8.count > 200 {
            throw InvalidName(description: "a list name is at most 200 bytes (this one is \(name.utf8.count))")
        }
        if name.utf8.contains(UInt8(ascii: "/")) { throw InvalidName(description: "a list name cannot contain '/'") }
        if name.hasPrefix(".") { throw InvalidName(description: "a list name cannot start with '.' (such as '..')") }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) {
            throw InvalidName(description: "a list name cannot contain NUL or control characters")
        }
        // Bytes that are not UTF-8 reach Swift as U+FFFD: refused rather than stored under a changed name.
        if name.unicodeScalars.contains("\u{FFFD}") {
            throw InvalidName(description: "a list name must be valid UTF-8")
        }
    }

    /// The names of the stored lists, sorted.
    public func names() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(Self.suffix) }.map { String($0.dropLast(Self.suffix.count)) }
            .filter { (try? Self.validate($0)) != nil }.sorted()
    }

    /// The list called `name`, or nil. With `recheck`, its file is looked at now rather than within the interval.
    public func list(_ name: String, recheck: Bool = false) -> ImageList? {
        let now = Date()
        // A loaded list's name was valid when it was loaded.
        if !recheck, let cached = loaded.withLock({ $0[name] }),
            now.timeIntervalSince(cached.checked) < Self.recheckInterval
        {
            return cached.list
        }
        guard (try? Self.validate(name)) != nil else { return nil }
        let path = file(name).path
        guard let stamp = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else {
            loaded.withLock { $0[name] = nil }
            return nil
        }
        if let cached = loaded.withLock({ $0[name] }), cached.stamp == stamp {
            loaded.withLock { $0[name]?.checked = now }
            return cached.list
        }
        guard let file = try? MappedFile(path: path) else { return nil }
        let list = ImageList(name: name, file: file)
        // The facts file is opened with the list it belongs to: a replaced list comes with its own.
        let facts = ListFacts(path: ListFacts.path(of: name, in: directory), writable: writesFacts)
        loaded.withLock { $0[name] = (list, stamp, now, facts) }
        return list
    }

    /// The list called `name` and its facts file (``list(_:recheck:)``).
    public func listWithFacts(_ name: String, recheck: Bool = false) -> (list: ImageList, facts: ListFacts?)? {
        guard let list = list(name, recheck: recheck) else { return nil }
        let facts =
            loaded.withLock { $0[name]?.facts }
            ?? ListFacts(path: ListFacts.path(of: name, in: directory), writable: false)
        return (list, facts)
    }

    /// Writes `list` whole, replacing the list of the same name; what was known of its URLs (``ListFacts``) moves with
    /// them to their new positions.
    public func save(_ list: ImageList) throws {
        try Self.validate(list.name)
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        moveFacts(to: list)
        let process = ProcessInfo.processInfo.processIdentifier
        let temporary = directory.appendingPathComponent(".\(list.name).\(process).tmp")
        do {
            let fd = try DiskCacheIO.open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
            do {
                try Array(list.storedText.utf8).withUnsafeBytes {
                    try DiskCacheIO.writeAll(fd, $0, path: temporary.path)
                }
                try DiskCacheIO.fsync(fd, path: temporary.path)
            } catch {
                try? DiskCacheIO.close(fd, path: temporary.path)
                throw error
            }
            try DiskCacheIO.close(fd, path: temporary.path)
            try DiskCacheIO.rename(temporary.path, to: file(list.name).path)
        } catch {
            _ = try? DiskCacheIO.unlink(temporary.path)
            let reason = (error as? DiskCacheSystemError).map { String(cString: strerror($0.code)) } ?? "\(error)"
            throw ListWriteError(name: list.name, reason: reason)
        }
    }

    /// Deletes the list called `name`; returns whether it existed.
    public func remove(_ name: String) throws -> Bool {
        try Self.validate(name)
        guard FileManager.default.fileExists(atPath: file(name).path) else { return false }
        try FileManager.default.removeItem(at: file(name))
        _ = try? DiskCacheIO.unlink(ListFacts.path(of: name, in: directory))
        loaded.withLock { $0[name] = nil }
        return true
    }

    func file(_ name: String) -> URL { directory.appendingPathComponent(name + Self.suffix) }

    /// Writes the facts file of `list` from the facts of the list it replaces (written before the list, so a reader
    /// that sees the new list finds its facts; a reader of the old list meanwhile finds none that fit, never wrong
    /// ones).
    private func moveFacts(to list: ImageList) {
        let path = ListFacts.path(of: list.name, in: directory)
        guard FileManager.default.fileExists(atPath: path),
            let old = (try? MappedFile(path: file(list.name).path)).map({ ImageList(name: list.name, file: $0) })
        else { return }
        let oldFacts = ListFacts(path: path, writable: false)
        var positions: [String: [Int]] = [:]
        for (index, entry) in old.entries.enumerated().reversed() {
            positions[entry.urlText, default: []].append(index)
        }
        let process = ProcessInfo.processInfo.processIdentifier
        let temporary = directory.appendingPathComponent(".\(list.name).\(process).facts.tmp").path
        _ = try? DiskCacheIO.unlink(temporary)
        let newFacts = ListFacts(path: temporary, writable: true)
        for (index, entry) in list.entries.enumerated() {
            guard let from = positions[entry.urlText]?.popLast(), let record = oldFacts.rawRecord(at: from) else {
                continue
            }
            newFacts.writeRaw(record, at: index)
        }
        if (try? DiskCacheIO.rename(temporary, to: path)) == nil { _ = try? DiskCacheIO.unlink(temporary) }
    }
}

/// A list could not be written (`imgfs list add`): nothing of it was left behind.
public struct ListWriteError: Error, CustomStringConvertible {
    /// The list's name.
    public let name: String
    /// What went wrong, in the system's words.
    public let reason: String

    /// One line naming the list and the reason.
    public var description: String { "cannot write the list \(name): \(reason)" }

    /// The list `name` could not be written for `reason`.
    public init(name: String, reason: String) {
        self.name = name
        self.reason = reason
    }
}
