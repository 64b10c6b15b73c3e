import Foundation
import Glibc
import ImgfsFilesystem
import ImgfsModel

/// The valid rows of a list being added, kept on disk between reading them and naming them (the names' index width
/// needs the count first): per row its URL, name suffix and given name, and whether its URL names no image type.
///
/// Guarantees: an anonymous file (unlinked as soon as it is made) in the given directory, gone with the value;
/// memory stays at two 1 MiB buffers whatever the count of rows; rows come back in the order they were added.
final class ListSpool {
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// How many rows were added.
    private(set) var count = 0

    /// The spool could not be written or read: the system's reason.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// One row.
    struct Row {
        let urlText: String
        let suffix: String
        let given: String?
        let needsType: Bool
    }

    init(directory: URL) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(reason: "cannot make \(directory.path)")
        }
        let path = directory.appendingPathComponent(".add.\(getpid()).\(UInt32.random(in: 0...UInt32.max)).spool").path
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Failure(reason: String(cString: strerror(errno)))
        }
        unlink(path)
        buffer.reserveCapacity(1 << 20)
    }

    deinit { close(fd) }

    func append(_ row: Row) throws {
        put(row.urlText)
        put(row.suffix)
        put(row.given ?? "")
        buffer.append(row.given == nil ? 0 : 1)
        buffer.append(row.needsType ? 1 : 0)
        count += 1
        if buffer.count >= 1 << 20 { try flush() }
    }

    private func put(_ text: String) {
        let bytes = Array(text.utf8)
        withUnsafeBytes(of: UInt32(bytes.count).littleEndian) { buffer += $0 }
        buffer += bytes
    }

    private func flush() throws {
        var written = 0
        while written < buffer.count {
            let result = buffer.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else {
                throw Failure(reason: String(cString: strerror(result < 0 ? errno : EIO)))
            }
            written += result
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with every row, in order.
    func forEach(_ body: (Row) throws -> Void) throws {
        try flush()
        var offset = 0
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var position = 0
        while true {
            let read = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if read < 0 && errno == EINTR { continue }
            guard read >= 0 else {
                throw Failure(reason: String(cString: strerror(errno)))
            }
            if read == 0 { break }
            offset += read
            pending.removeSubrange(..<position)
            pending += chunk.prefix(read)
            position = 0
            while let (row, next) = Self.row(pending, at: position) {
                try body(row)
                position = next
            }
        }
    }

    private static func row(_ bytes: [UInt8], at start: Int) -> (Row, Int)? {
        var at = start
        func text() -> String? {
            guard at + 4 <= bytes.count else { return nil }
            let length = bytes[at..<(at + 4)].reversed().reduce(0) { $0 << 8 | Int($1) }
            guard at + 4 + length <= bytes.count else { return nil }
            defer { at += 4 + length }
            return String(decoding: bytes[(at + 4)..<(at + 4 + length)], as: UTF8.self)
        }
        guard let url = text(), let suffix = text(), let given = text(), at + 2 <= bytes.count else { return nil }
        let row = Row(urlText: url, suffix: suffix, given: bytes[at] == 1 ? given : nil, needsType: bytes[at + 1] == 1)
        return (row, at + 2)
    }
}
