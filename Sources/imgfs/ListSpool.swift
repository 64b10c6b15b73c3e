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

    /// One row as stored: its bytes, valid during the call that hands it over only.
    struct StoredRow {
        let url: UnsafeRawBufferPointer
        let suffix: UnsafeRawBufferPointer
        let given: UnsafeRawBufferPointer?
        let needsType: Bool

        var urlText: String { String(decoding: url, as: UTF8.self) }
        var row: Row {
            Row(
                urlText: urlText, suffix: String(decoding: suffix, as: UTF8.self),
                given: given.map { String(decoding: $0, as: UTF8.self) }, needsType: needsType)
        }
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
        var url = row.urlText
        var suffix = row.suffix
        var given = row.given ?? ""
        try url.withUTF8 { url in
            try suffix.withUTF8 { suffix in
                try given.withUTF8 { given in
                    try append(
                        url: UnsafeRawBufferPointer(url), suffix: UnsafeRawBufferPointer(suffix),
                        given: row.given == nil ? nil : UnsafeRawBufferPointer(given), needsType: row.needsType)
                }
            }
        }
    }

    /// Adds the row of these bytes.
    func append(
        url: UnsafeRawBufferPointer, suffix: UnsafeRawBufferPointer, given: UnsafeRawBufferPointer?, needsType: Bool
    ) throws {
        put(url)
        put(suffix)
        put(given ?? UnsafeRawBufferPointer(start: nil, count: 0))
        buffer.append(given == nil ? 0 : 1)
        buffer.append(needsType ? 1 : 0)
        count += 1
        if buffer.count >= 1 << 20 { try flush() }
    }

    private func put(_ bytes: UnsafeRawBufferPointer) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: bytes.count).littleEndian) { buffer.append(contentsOf: $0) }
        buffer.append(contentsOf: bytes)
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
        try forEachStored { try body($0.row) }
    }

    /// Calls `body` with every row as stored, in order.
    func forEachStored(_ body: (StoredRow) throws -> Void) throws {
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
            try pending.withUnsafeBytes { bytes in
                while let (row, next) = Self.row(bytes, at: position) {
                    try body(row)
                    position = next
                }
            }
        }
    }

    private static func row(_ bytes: UnsafeRawBufferPointer, at start: Int) -> (StoredRow, Int)? {
        var at = start
        func field() -> UnsafeRawBufferPointer? {
            guard at + 4 <= bytes.count else { return nil }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
            guard length <= bytes.count - at - 4 else { return nil }
            defer { at += 4 + length }
            return UnsafeRawBufferPointer(rebasing: bytes[(at + 4)..<(at + 4 + length)])
        }
        guard let url = field(), let suffix = field(), let given = field(), at + 2 <= bytes.count else { return nil }
        let row = StoredRow(
            url: url, suffix: suffix, given: bytes[at] == 1 ? given : nil, needsType: bytes[at + 1] == 1)
        return (row, at + 2)
    }
}
