extension NetworkAddress {
    /// Parses a numeric address; nil for anything else, including host names.
    ///
    /// Accepts exactly:
    /// - IPv4 as a dotted quad of four decimal numbers 0–255 without leading zeros (`192.0.2.1`). The legacy
    ///   `inet_aton` forms are refused, because they read differently in different parsers: octal (`010.0.0.1`),
    ///   hexadecimal (`0x7f.1`), and fewer than four parts (`127.1`, `2130706433`).
    /// - IPv6 in the RFC 4291 text forms: eight groups of 1–4 hex digits, one `::` for one or more zero groups,
    ///   and a dotted quad as the last 32 bits (`::ffff:192.0.2.1`); optionally in brackets (`[::1]`) and with a
    ///   non-empty zone id of printable ASCII (`fe80::1%eth0`), which is dropped.
    ///
    /// No white space, signs or other decoration is allowed. Text longer than 128 bytes is refused unread.
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)[...]
        guard !utf8.isEmpty, utf8.count <= 128 else { return nil }
        if let value = Self.parseIPv4(utf8) {
            self.init(storage: .v4(value))
            return
        }
        if utf8.first == UInt8(ascii: "[") {
            guard utf8.count >= 2, utf8.last == UInt8(ascii: "]") else { return nil }
            utf8 = utf8.dropFirst().dropLast()
        }
        if let percent = utf8.firstIndex(of: UInt8(ascii: "%")) {
            let zone = utf8[(percent + 1)...]
            guard !zone.isEmpty, zone.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !"[]%".utf8.contains($0) }) else {
                return nil
            }
            utf8 = utf8[..<percent]
        }
        guard let (high, low) = Self.parseIPv6(utf8) else { return nil }
        self.init(storage: .v6(high: high, low: low))
    }

    /// A strict dotted quad, or nil.
    static func parseIPv4(_ text: ArraySlice<UInt8>) -> UInt32? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            guard part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
            let number = part.reduce(0) { $0 * 10 + UInt32($1 - 0x30) }
            guard number <= 255 else { return nil }
            value = value << 8 | number
        }
        return value
    }

    /// The 128 bits of an IPv6 address without brackets or zone, or nil.
    static func parseIPv6(_ text: ArraySlice<UInt8>) -> (UInt64, UInt64)? {
        var groups: [UInt16]
        if let gap = firstDoubleColon(text) {
            let before = text[..<gap], after = text[(gap + 2)...]
            guard firstDoubleColon(after) == nil,
                let head = parseGroups(before, dottedTail: false),
                let tail = parseGroups(after, dottedTail: true),
                head.count + tail.count <= 7
            else { return nil }
            groups = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let all = parseGroups(text, dottedTail: true), all.count == 8 else { return nil }
            groups = all
        }
        let high = groups[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let low = groups[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (high, low)
    }

    private static func firstDoubleColon(_ text: ArraySlice<UInt8>) -> Int? {
        var index = text.startIndex
        while index + 1 < text.endIndex {
            if text[index] == UInt8(ascii: ":"), text[index + 1] == UInt8(ascii: ":") { return index }
            index += 1
        }
        return nil
    }

    /// Colon-separated groups of 1–4 hex digits (none for empty text); when `dottedTail`, the last part may be a
    /// dotted quad, which counts as two groups. Nil when any part is empty or malformed.
    private static func parseGroups(_ text: ArraySlice<UInt8>, dottedTail: Bool) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        let parts = text.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count <= 8 else { return nil }
        var groups: [UInt16] = []
        for (index, part) in parts.enumerated() {
            if dottedTail, index == parts.count - 1, part.contains(UInt8(ascii: ".")) {
                guard let value = parseIPv4(part) else { return nil }
                groups += [UInt16(truncatingIfNeeded: value >> 16), UInt16(truncatingIfNeeded: value)]
                continue
            }
            guard (1...4).contains(part.count) else { return nil }
            var group: UInt16 = 0
            for byte in part {
                guard let digit = NameCodec.hexValue(byte) else { return nil }
                group = group << 4 | UInt16(digit)
            }
            groups.append(group)
        }
        return groups
    }
}
