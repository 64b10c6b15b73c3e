import ImgfsModel

/// A line of a plain-text list judged on its bytes alone: whether it is plainly one valid image URL, and the image
/// extension its path ends with. `imgfs list add` reads millions of such lines; this lets it skip the Strings, the
/// ``ImageURL`` and its digest for every line that needs none.
///
/// Guarantees: a line ``isPlainURL(_:)`` accepts is accepted by ``ImageURL/init(_:keying:)`` with exactly its bytes as
/// the URL's text, and ``ListText/parse(_:)`` reads it as one valid line with no given name: it starts with `http://`
/// or `https://`, holds only printable ASCII other than space (so no tab, no comment, nothing to trim), is at most
/// ``ImageURL/maximumLength`` bytes, and its authority is a host (no brackets, no `@`, no byte a URL may not hold)
/// with an optional port of 1 to 65535. Any other line is left to ``ListText``, which alone decides what is refused
/// and why. ``pathExtension(of:)`` answers what ``ImageExtension/fromPath(of:)`` answers for such a URL.
public enum PlainListLine {
    /// Whether `line` (without its line end) is plainly one valid URL.
    public static func isPlainURL(_ line: UnsafeRawBufferPointer) -> Bool {
        let count = line.count
        guard count <= ImageURL.maximumLength, let start = authorityStart(line) else { return false }
        var index = 0
        while index < count {
            let byte = line[index]
            if byte <= 0x20 || byte >= 0x7F { return false }
            index += 1
        }
        var end = start
        while end < count, !isAuthorityEnd(line[end]) { end += 1 }
        guard end > start, line[start] != UInt8(ascii: "[") else { return false }
        var colon: Int?
        for position in start..<end {
            let byte = line[position]
            if byte == UInt8(ascii: "@") || mayNotHold(byte) { return false }
            if byte == UInt8(ascii: ":") { colon = position }
        }
        guard let colon else { return true }
        guard colon > start else { return false }
        let digits = end - colon - 1
        if digits == 0 { return true }
        guard digits <= 5 else { return false }
        var port = 0
        for position in (colon + 1)..<end {
            let byte = line[position]
            guard byte >= 0x30 && byte <= 0x39 else { return false }
            port = port * 10 + Int(byte - 0x30)
        }
        return port >= 1 && port <= 65535
    }

    /// Where the image extension that the path of `url` (a URL ``isPlainURL(_:)`` accepts) ends with is, as
    /// ``ImageExtension/fromPath(of:)`` finds it: the bytes after the last dot before the query, when no `/` follows
    /// that dot and they name a known image type in any case; nil otherwise.
    public static func pathExtension(of url: UnsafeRawBufferPointer) -> Range<Int>? {
        let end = queryStart(url)
        var dot = end - 1
        while dot >= 0, url[dot] != UInt8(ascii: ".") {
            if url[dot] == UInt8(ascii: "/") { return nil }
            dot -= 1
        }
        guard dot >= 0 else { return nil }
        return isKnownExtension(url, (dot + 1)..<end) ? (dot + 1)..<end : nil
    }

    // MARK: - Parts of a plain URL

    /// The offset after `http://` or `https://`; nil when the line starts with neither.
    static func authorityStart(_ line: UnsafeRawBufferPointer) -> Int? {
        if starts(line, with: "http://") { return 7 }
        if starts(line, with: "https://") { return 8 }
        return nil
    }

    /// Where the resource ends: the first `#`, else the end.
    static func resourceEnd(_ url: UnsafeRawBufferPointer) -> Int {
        var index = 0
        while index < url.count, url[index] != UInt8(ascii: "#") { index += 1 }
        return index
    }

    /// Where the query of the resource starts: its first `?`, else the resource's end.
    static func queryStart(_ url: UnsafeRawBufferPointer) -> Int {
        let end = resourceEnd(url)
        var index = 0
        while index < end, url[index] != UInt8(ascii: "?") { index += 1 }
        return index
    }

    /// Whether `url[range]`, in lower case, is an extension imgfs knows.
    static func isKnownExtension(_ url: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        guard !range.isEmpty, range.count <= 8 else { return false }
        return ImageExtension.isKnown(String(decoding: range.map { lowercased(url[$0]) }, as: UTF8.self))
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte
    }

    private static func starts(_ line: UnsafeRawBufferPointer, with prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard line.count >= count else { return false }
        let bytes = prefix.utf8Start
        for index in 0..<count where line[index] != bytes[index] { return false }
        return true
    }

    private static func isAuthorityEnd(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    /// The printable ASCII bytes a URL may not hold as they are: `"` `<` `>` `\` `^` `` ` `` `{` `|` `}`.
    private static func mayNotHold(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x22, 0x3C, 0x3E, 0x5C, 0x5E, 0x60, 0x7B, 0x7C, 0x7D: true
        default: false
        }
    }
}
