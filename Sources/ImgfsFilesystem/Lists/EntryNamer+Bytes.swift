import ImgfsModel

// MARK: - Names on bytes, for the URLs of plain lines

extension EntryNamer {
    /// Appends ``suffix(url:given:knownExtension:)`` of the URL `url` (a line ``PlainListLine/isPlainURL(_:)``
    /// accepts; no given name, no known extension) to `suffix`, without making a String; false, with nothing
    /// appended, when the last path segment holds a `%` (its percent-decoding is left to the String path).
    public static func appendSuffix(ofPlainURL url: UnsafeRawBufferPointer, to suffix: inout [UInt8]) -> Bool {
        let end = PlainListLine.queryStart(url)
        let authority = PlainListLine.authorityStart(url) ?? 0
        // The last segment: after the last `/` of the path that is followed by something other than `/`.
        var segmentEnd = end
        var segmentStart = end
        var slash = authority
        while slash < end, url[slash] != UInt8(ascii: "/") { slash += 1 }
        if slash < end {
            while segmentEnd > slash, url[segmentEnd - 1] == UInt8(ascii: "/") { segmentEnd -= 1 }
            segmentStart = segmentEnd
            while segmentStart > slash, url[segmentStart - 1] != UInt8(ascii: "/") { segmentStart -= 1 }
        }
        var dot: Int?
        for index in segmentStart..<segmentEnd {
            if url[index] == UInt8(ascii: "%") { return false }
            if url[index] == UInt8(ascii: ".") { dot = index }
        }
        // The segment's own extension, else the path's (`http://host.png` has no segment but an extension).
        var stemEnd = segmentEnd
        var fileExtension: Range<Int>?
        if let dot, dot != segmentStart, PlainListLine.isKnownExtension(url, (dot + 1)..<segmentEnd) {
            stemEnd = dot
            fileExtension = (dot + 1)..<segmentEnd
        } else {
            fileExtension = PlainListLine.pathExtension(of: url)
        }
        let start = suffix.count
        suffix.append(UInt8(ascii: "-"))
        appendSanitized(url, segmentStart..<stemEnd, to: &suffix)
        if suffix.count == start + 1 { suffix.removeLast() }
        if let fileExtension {
            suffix.append(UInt8(ascii: "."))
            for index in fileExtension { suffix.append(PlainListLine.lowercased(url[index])) }
        }
        return true
    }

    /// Appends ``sanitize(_:)`` of the ASCII bytes `bytes[range]` to `output`.
    static func appendSanitized(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, to output: inout [UInt8]) {
        let start = output.count
        var pendingDash = false
        for index in range {
            let byte = bytes[index]
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            let keep =
                letter || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            if keep {
                if pendingDash && output.count > start { output.append(UInt8(ascii: "-")) }
                pendingDash = false
                output.append(byte)
            } else {
                pendingDash = true
            }
        }
        func trimmable(_ byte: UInt8) -> Bool { byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") }
        var first = start
        while first < output.count, trimmable(output[first]) { first += 1 }
        output.removeSubrange(start..<first)
        if output.count - start > maximumStem { output.removeLast(output.count - start - maximumStem) }
        while output.count > start, trimmable(output[output.count - 1]) { output.removeLast() }
    }

    /// Appends ``name(index:count:suffix:)`` to `output`: the zero-padded index, then `suffix`.
    public static func appendName(
        index: Int, count: Int, suffix: UnsafeRawBufferPointer, to output: inout [UInt8]
    ) {
        let width = max(5, decimalDigits(count))
        let number = index + 1
        let digits = decimalDigits(number)
        for _ in 0..<max(0, width - digits) { output.append(UInt8(ascii: "0")) }
        let end = output.count + digits
        output.append(contentsOf: repeatElement(0, count: digits))
        var rest = number
        for position in stride(from: end - 1, through: end - digits, by: -1) {
            output[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        output.append(contentsOf: suffix)
    }

    /// The number of decimal digits of `value` (`String(value).count` for values of 0 and more).
    static func decimalDigits(_ value: Int) -> Int {
        guard value > 0 else { return value == 0 ? 1 : String(value).count }
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }
}
