import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - Writing a list one entry at a time

extension ListStore {
    /// Writes the entries of a list as they come, in bounded memory (`imgfs list add` of millions of URLs).
    public final class Writer {
        let name: String
        let temporary: String
        let fd: Int32
        private var buffer: [UInt8] = []
        private let oldFacts: ListFacts?
        private let newFacts: ListFacts?
        private let factsTemporary: String
        /// How many entries were written.
        public private(set) var count = 0

        init(name: String, directory: URL, facts: String) throws {
            self.name = name
            let process = ProcessInfo.processInfo.processIdentifier
            temporary = directory.appendingPathComponent(".\(name).\(process).tmp").path
            factsTemporary = directory.appendingPathComponent(".\(name).\(process).facts.tmp").path
            fd = try DiskCacheIO.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
            if FileManager.default.fileExists(atPath: facts) {
                _ = try? DiskCacheIO.unlink(factsTemporary)
                oldFacts = ListFacts(path: facts, writable: false)
                newFacts = ListFacts(path: factsTemporary, writable: true)
            } else {
                oldFacts = nil
                newFacts = nil
            }
            buffer.reserveCapacity(1 << 20)
            buffer += Array((ImageList.header + "\n").utf8)
        }

        /// Adds the entry `name` for `urlText`; `previous`: its position in the list it replaces (its facts follow).
        public func append(name: String, urlText: String, previous: Int? = nil) throws {
            buffer += name.utf8
            buffer.append(0x09)
            buffer += urlText.utf8
            buffer.append(0x0A)
            if let previous, let record = oldFacts?.rawRecord(at: previous) { newFacts?.writeRaw(record, at: count) }
            count += 1
            if buffer.count >= 1 << 20 { try flush() }
        }

        /// Adds entry `index` of `count`, named ``EntryNamer/name(index:count:suffix:)`` from `suffix`, for the URL
        /// text `urlText` (bytes, not kept); `previous` as in ``append(name:urlText:previous:)``.
        public func append(
            index: Int, count: Int, suffix: UnsafeRawBufferPointer, urlText: UnsafeRawBufferPointer,
            previous: Int? = nil
        ) throws {
            EntryNamer.appendName(index: index, count: count, suffix: suffix, to: &buffer)
            buffer.append(0x09)
            buffer.append(contentsOf: urlText)
            buffer.append(0x0A)
            if let previous, let record = oldFacts?.rawRecord(at: previous) {
                newFacts?.writeRaw(record, at: self.count)
            }
            self.count += 1
            if buffer.count >= 1 << 20 { try flush() }
        }

        func flush() throws {
            try buffer.withUnsafeBytes { try DiskCacheIO.writeAll(fd, $0, path: temporary) }
            buffer.removeAll(keepingCapacity: true)
        }

        /// Makes the list the one called `name`: its facts file first, then the list (renamed over the old one).
        func commit(facts: String, list: String) throws {
            try flush()
            try DiskCacheIO.fsync(fd, path: temporary)
            try DiskCacheIO.close(fd, path: temporary)
            // The new facts file exists once a record moved into it; with none, no old record applies any more.
            if newFacts != nil {
                if FileManager.default.fileExists(atPath: factsTemporary) {
                    try DiskCacheIO.rename(factsTemporary, to: facts)
                } else {
                    _ = try? DiskCacheIO.unlink(facts)
                }
            }
            try DiskCacheIO.rename(temporary, to: list)
        }

        func abandon() {
            try? DiskCacheIO.close(fd, path: temporary)
            _ = try? DiskCacheIO.unlink(temporary)
            _ = try? DiskCacheIO.unlink(factsTemporary)
        }
    }

    /// Writes the list `name` from what `body` appends to the writer, replacing the list of that name when `body`
    /// returns; nothing is left behind when it throws. The facts of URLs appended with their previous position move
    /// with them.
    public func write(_ name: String, _ body: (Writer) throws -> Void) throws {
        try Self.validate(name)
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let facts = ListFacts.path(of: name, in: directory)
        let writer: Writer
        do {
            writer = try Writer(name: name, directory: directory, facts: facts)
        } catch {
            throw ListWriteError(name: name, reason: Self.reason(error))
        }
        do {
            try body(writer)
            try writer.commit(facts: facts, list: file(name).path)
        } catch let error as ListWriteError {
            writer.abandon()
            throw error
        } catch {
            writer.abandon()
            throw ListWriteError(name: name, reason: Self.reason(error))
        }
    }

    static func reason(_ error: any Error) -> String {
        (error as? DiskCacheSystemError).map { String(cString: strerror($0.code)) } ?? "\(error)"
    }
}
