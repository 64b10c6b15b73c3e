/// The request line and header fields of one HTTP/1.x request, parsed leniently.
///
/// Accepts CRLF or bare LF line ends, optional whitespace around header values,
/// and obsolete line folding; rejects a malformed request line or a header line
/// without a colon.
struct HTTPRequestHead {
    let method: String
    let target: String
    let version: String
    let headers: [(String, String)]

    /// Maximum size of a request head (request line plus headers) the origin accepts.
    static let maximumSize = 64 * 1024

    /// Parses the bytes of a request head (without the blank line that ends it);
    /// returns nil when they are not a valid HTTP/1.x request head.
    init?(_ bytes: ArraySlice<UInt8>) {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { line -> String in
                let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
                return String(decoding: trimmed, as: UTF8.self)
            }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard !lines.isEmpty else { return nil }

        let parts = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        method = String(parts[0])
        target = String(parts[1])
        version = String(parts[2])

        var fields: [(String, String)] = []
        for line in lines {
            if line.first == " " || line.first == "\t" {
                guard let previous = fields.popLast() else { return nil }
                fields.append((previous.0, previous.1 + " " + HTTPRequestHead.trim(Substring(line))))
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = HTTPRequestHead.trim(line[..<colon])
            guard !name.isEmpty else { return nil }
            fields.append((name, HTTPRequestHead.trim(line[line.index(after: colon)...])))
        }
        headers = fields
    }

    /// Finds the end of a request head in `buffer`: returns the range of the head
    /// itself and the index just past the terminating blank line, or nil if the
    /// head is not complete yet.
    static func findEnd(in buffer: [UInt8], from start: Int) -> (head: Range<Int>, next: Int)? {
        var index = max(start, 0)
        while index < buffer.count {
            if buffer[index] == UInt8(ascii: "\n") {
                if index + 1 < buffer.count && buffer[index + 1] == UInt8(ascii: "\n") {
                    return (0..<index, index + 2)
                }
                if index + 2 < buffer.count && buffer[index + 1] == UInt8(ascii: "\r")
                    && buffer[index + 2] == UInt8(ascii: "\n")
                {
                    return (0..<index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    /// Strips spaces and tabs from both ends.
    private static func trim(_ text: Substring) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }),
            let last = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(text[first...last])
    }
}
