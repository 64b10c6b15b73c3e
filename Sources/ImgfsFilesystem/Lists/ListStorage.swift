import Foundation
import ImgfsModel
import ImgfsStore

/// The stored lines of a list (`name<TAB>url` a line, `#` comments) with what finds them: the start of each entry's
/// line, and an open-addressing table from names to positions.
///
/// Guarantees: immutable once built; lines that are empty, start with `#` or hold no tab are not entries; a name that
/// repeats is found at its first entry; about 4 bytes per entry for the line starts, and 4 to 8 for the table, which
/// is built at the first lookup by name (a listing needs none). A mapped file's pages are let go once the starts are
/// found and again once the table is built, so an unread list costs only those arrays.
final class ListStorage: Sendable {
    /// Where the lines are.
    enum Bytes: Sendable {
        case owned([UInt8])
        case mapped(MappedFile)
    }

    private let bytes: Bytes
    /// Where each entry's line starts.
    private let starts: [UInt32]
    /// Position + 1 of the entry whose name hashes to the slot (0: empty); a power of two in size. Nil until the
    /// first lookup by name.
    private let lookupTable = Locked<[UInt32]?>(nil)

    /// The number of entries.
    var count: Int { starts.count }

    init(bytes: Bytes) {
        self.bytes = bytes
        var starts: [UInt32] = []
        Self.withBytes(bytes) { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            let end = min(buffer.count, Int(UInt32.max))
            while offset < end {
                // The line's end, and whether it holds a tab (the first one ends the name: it is near the start).
                let cursor =
                    memchr(base + offset, 0x0A, buffer.count - offset).map { UnsafeRawPointer($0) - base }
                    ?? buffer.count
                if buffer[offset] != UInt8(ascii: "#"), memchr(base + offset, 0x09, cursor - offset) != nil {
                    starts.append(UInt32(offset))
                }
                offset = cursor + 1
            }
        }
        self.starts = starts
        if case .mapped(let file) = bytes { file.releasePages() }
    }

    /// The table from names to positions, built at the first call.
    private func table() -> [UInt32] {
        lookupTable.withLock { table in
            if let table { return table }
            let built = Self.withBytes(bytes) { Self.table(buffer: $0, starts: starts) }
            if case .mapped(let file) = bytes { file.releasePages() }
            table = built
            return built
        }
    }

    private static func table(buffer: UnsafeRawBufferPointer, starts: [UInt32]) -> [UInt32] {
        var capacity = 8
        while capacity < starts.count + starts.count / 2 { capacity <<= 1 }
        var table = [UInt32](repeating: 0, count: capacity)
        for (position, start) in starts.enumerated() {
            let name = Self.nameRange(buffer, start: Int(start))
            let key = UnsafeRawBufferPointer(rebasing: buffer[name])
            var slot = Int(truncatingIfNeeded: Self.hash(buffer, name)) & (capacity - 1)
            while table[slot] != 0 {
                let other = Self.nameRange(buffer, start: Int(starts[Int(table[slot]) - 1]))
                if Self.equal(buffer, other, key) { break }
                slot = (slot + 1) & (capacity - 1)
            }
            if table[slot] == 0 { table[slot] = UInt32(position + 1) }
        }
        return table
    }

    /// Storage for `entries`, as their stored lines.
    convenience init(entries: [ImageList.Entry]) {
        var text: [UInt8] = []
        for entry in entries {
            text += entry.name.utf8
            text.append(UInt8(ascii: "\t"))
            text += entry.urlText.utf8
            text.append(UInt8(ascii: "\n"))
        }
        self.init(bytes: .owned(text))
    }

    /// The entry at `position`.
    func entry(_ position: Int) -> ImageList.Entry {
        withBytes { buffer in
            let start = Int(starts[position])
            let name = Self.nameRange(buffer, start: start)
            let url = (name.upperBound + 1)..<Self.lineEnd(buffer, from: start)
            return ImageList.Entry(
                name: String(decoding: buffer[name], as: UTF8.self),
                urlText: String(decoding: buffer[url], as: UTF8.self))
        }
    }

    /// The name of the entry at `position`.
    func name(_ position: Int) -> String {
        withBytes { String(decoding: $0[Self.nameRange($0, start: Int(starts[position]))], as: UTF8.self) }
    }

    /// The name of the entry at `position` and its ``hash(_:_:)``.
    func nameAndHash(_ position: Int) -> (String, UInt64) {
        withBytes { buffer in
            let range = Self.nameRange(buffer, start: Int(starts[position]))
            return (String(decoding: buffer[range], as: UTF8.self), Self.hash(buffer, range))
        }
    }

    /// ``EntryFacts/hash(_:)`` of the URL text of the entry at `position`.
    func urlHash(_ position: Int) -> UInt64 {
        withBytes { buffer in
            let start = Int(starts[position])
            let name = Self.nameRange(buffer, start: start)
            let url = (name.upperBound + 1)..<Self.lineEnd(buffer, from: start)
            // Bytes that are not ASCII are hashed as the entry's text has them (invalid UTF-8 replaced).
            guard !buffer[url].contains(where: { $0 >= 0x80 }) else {
                return EntryFacts.hash(String(decoding: buffer[url], as: UTF8.self))
            }
            let hash = Self.hash(buffer, url)
            return hash == 0 ? 1 : hash
        }
    }

    /// The position of the entry called `name`.
    func index(of name: String) -> Int? {
        var wanted = name
        let table = table()
        return wanted.withUTF8 { utf8 in
            let key = UnsafeRawBufferPointer(utf8)
            return withBytes { buffer in
                let mask = table.count - 1
                var slot = Int(truncatingIfNeeded: Self.hash(key, 0..<key.count)) & mask
                while table[slot] != 0 {
                    let position = Int(table[slot]) - 1
                    if Self.equal(buffer, Self.nameRange(buffer, start: Int(starts[position])), key) {
                        return position
                    }
                    slot = (slot + 1) & mask
                }
                return nil
            }
        }
    }

    // MARK: - Bytes

    private func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        Self.withBytes(bytes, body)
    }

    private static func withBytes<Result>(_ bytes: Bytes, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        switch bytes {
        case .owned(let array): array.withUnsafeBytes(body)
        case .mapped(let file): file.withBytes(body)
        }
    }

    /// The offset of the newline that ends the line starting at `offset` (the end of the bytes for the last line).
    private static func lineEnd(_ buffer: UnsafeRawBufferPointer, from offset: Int) -> Int {
        var cursor = max(0, offset)
        while cursor < buffer.count, buffer[cursor] != 0x0A { cursor += 1 }
        return cursor
    }

    /// The name of the line starting at `start`: up to its first tab (stored lines always hold one).
    private static func nameRange(_ buffer: UnsafeRawBufferPointer, start: Int) -> Range<Int> {
        var cursor = start
        while cursor < buffer.count, buffer[cursor] != 0x09, buffer[cursor] != 0x0A { cursor += 1 }
        return start..<cursor
    }

    /// 64-bit FNV-1a of `buffer[range]`.
    private static func hash(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for offset in range { hash = (hash ^ UInt64(buffer[offset])) &* 0x0100_0000_01B3 }
        return hash
    }

    /// Whether `buffer[range]` holds the bytes of `key`.
    private static func equal(
        _ buffer: UnsafeRawBufferPointer, _ range: Range<Int>, _ key: UnsafeRawBufferPointer
    )
        -> Bool
    {
        guard range.count == key.count else { return false }
        var index = 0
        while index < key.count {
            if buffer[range.lowerBound + index] != key[index] { return false }
            index += 1
        }
        return true
    }
}
