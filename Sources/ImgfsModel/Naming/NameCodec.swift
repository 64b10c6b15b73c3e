/// Percent-encoding between URLs and single file-name components.
///
/// `encode` escapes every byte except the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), exactly as Python's
/// `urllib.parse.quote(url, safe='')` does, so the result never holds `/`, `+` or `%` unescaped. `decode` accepts that
/// form and anything laxer (`encodeURIComponent` output, lower-case hex, unescaped characters), and rejects a `%`
/// that is not followed by two hexadecimal digits and bytes that do not decode to UTF-8 text.
public enum NameCodec {
    /// The percent-encoded form of `text`.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text that the percent-encoded `name` stands for.
    public static func decode<Name: Collection<UInt8>>(_ name: Name) throws(NameError) -> String {
        try decode(Array(name))
    }

    /// The text that the percent-encoded `name` stands for (every lookup decodes its name: a loop over concrete
    /// bytes, where a generic one called from another module would go through witness calls per byte).
    public static func decode(_ name: [UInt8]) throws(NameError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(name.count)
        var iterator = name.makeIterator()
        var offset = 0
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw .invalidPercentEscape(offset: offset)
                }
                if high == 0 && low == 0 { throw .forbiddenCharacter(0) }
                out.append(high << 4 | low)
                offset += 3
            } else {
                if byte == 0 { throw .forbiddenCharacter(0) }
                out.append(byte)
                offset += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .notUTF8 }
        return text
    }

    // MARK: - Bytes

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    /// The value of a hexadecimal digit (either case), or nil.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
