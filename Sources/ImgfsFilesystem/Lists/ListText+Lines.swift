import Foundation
import ImgfsModel

// MARK: - Plain text read line by line, on bytes

extension ListText {
    /// One valid line of plain text, as ``scanText(_:firstLine:line:problem:)`` hands it over.
    public enum ScannedLine {
        /// A line that ``PlainListLine/isPlainURL(_:)`` accepts: its bytes (without the line end), valid during the
        /// call only. Its URL's text is those bytes; it has no given name.
        case plain(UnsafeRawBufferPointer)
        /// Any other valid line.
        case parsed(Line)
    }

    /// Reads the plain-text lines of `bytes`, numbered from `firstLine`, and returns the number of the line after
    /// them. The bytes hold whole lines: they end after a `\n`, or at the end of the text.
    ///
    /// Guarantees: the valid lines (in order) and the problems (with their numbers) are those ``parse(_:)`` finds in
    /// the whole text, however it is cut into such pieces; a line that is plainly a URL is handed over as its bytes,
    /// without a String or an ``ImageURL``; every other line is judged as ``parse(_:)`` judges it.
    public static func scanText(
        _ bytes: UnsafeRawBufferPointer, firstLine: Int, line: (ScannedLine) throws -> Void,
        problem: (Problem) -> Void
    ) rethrows -> Int {
        guard let base = bytes.baseAddress else { return firstLine }
        var number = firstLine
        var start = 0
        let count = bytes.count
        while start < count {
            let end = memchr(base + start, 0x0A, count - start).map { UnsafeRawPointer($0) - base } ?? count
            // `\r\n` is one line end (one Character, as parse(_:) splits).
            var lineEnd = end
            if end < count, lineEnd > start, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            let text = UnsafeRawBufferPointer(rebasing: bytes[start..<lineEnd])
            if text.isEmpty {
                number += 1
            } else if PlainListLine.isPlainURL(text) {
                try line(.plain(text))
                number += 1
            } else {
                // Other line ends inside (`\r`, U+2028, ...) start lines of their own, as in parse(_:).
                let string = String(decoding: text, as: UTF8.self)
                for raw in string.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
                    switch judge(raw, number: number) {
                    case .valid(let valid): try line(.parsed(valid))
                    case .rejected(let rejected): problem(rejected)
                    case nil: break
                    }
                    number += 1
                }
            }
            start = end + 1
        }
        return number
    }
}
