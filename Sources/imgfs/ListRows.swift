import Foundation
import Glibc
import ImgfsCurl
import ImgfsFilesystem
import ImgfsModel

/// The rows of a list file read in bounded memory: the input (a file or standard input) is read in pieces of about
/// 1 MiB, decompressed as it is read when it is gzip, cut at line ends (for CSV and TSV, at line ends outside quotes),
/// and each piece parsed as ``ListText`` parses a whole text.
///
/// Plain text is read line by line on its bytes (``ListText/scanText(_:firstLine:line:problem:)``): a line that is
/// plainly a URL reaches the caller as bytes, without a String or an ``ImageURL``.
///
/// Guarantees: memory does not grow with the input; every row is reported (valid, or a problem with its line number
/// in the whole input) in order, exactly as a parse of the whole text would; a gzip stream that is corrupt or cut
/// short fails the whole read.
struct ListRows {
    /// The file, or `-` for standard input.
    let source: String
    /// The format asked for; nil: from the file's name, else from the first piece.
    let format: ListFormat?
    let columns: ListText.Columns
    /// The size of a piece read at once.
    var pieceSize = 1 << 20

    /// Why the rows cannot be read.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// Calls `row` with each valid row and `problem` with each rejected one, in order.
    func read(
        _ row: (ListText.Line) throws -> Void, problem: (ListText.Problem) -> Void
    ) throws {
        try scan(
            { scanned in
                switch scanned {
                case .parsed(let line): try row(line)
                case .plain(let bytes):
                    try row(ListText.Line(url: ImageURL(String(decoding: bytes, as: UTF8.self)), givenName: nil))
                }
            }, problem: problem)
    }

    /// Calls `row` with each valid row and `problem` with each rejected one, in order; a plain-text line that is
    /// plainly a URL comes as its bytes (valid during the call only).
    func scan(
        _ row: (ListText.ScannedLine) throws -> Void, problem: (ListText.Problem) -> Void
    ) throws {
        let descriptor = source == "-" ? STDIN_FILENO : open(source, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Unreadable(description: "cannot open the list \(source): \(String(cString: strerror(errno)))")
        }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        var parser = PieceParser(format: format, source: source, columns: columns)
        var pending: [UInt8] = []
        var decoder: ContentDecoder?
        var first = true
        var chunk = [UInt8](repeating: 0, count: pieceSize)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw Unreadable(description: "cannot read \(source): \(String(cString: strerror(errno)))")
            }
            if first && count > 0 {
                first = false
                if ContentDecoder.isGzip(Array(chunk.prefix(count))) { decoder = ContentDecoder(encoding: "gzip") }
            }
            if count == 0 { break }
            if let decoder {
                let fed = chunk.withUnsafeBytes { input in
                    decoder.feed(UnsafeRawBufferPointer(rebasing: input.prefix(count))) { piece in
                        pending.append(contentsOf: piece)
                        return true
                    }
                }
                guard fed else { throw Unreadable(description: "\(source): a gzip stream that is corrupt") }
            } else {
                pending.append(contentsOf: chunk.prefix(count))
            }
            parser.decideFormat(pending)
            if parser.format == .text {
                // Every whole line now: what is left is less than one line.
                guard let cut = pending.lastIndex(of: 0x0A).map({ $0 + 1 }) else { continue }
                try parser.scanText(pending, upTo: cut, row: row, problem: problem)
                pending.removeSubrange(..<cut)
            } else if pending.count >= pieceSize, let cut = parser.cut(pending) {
                try parser.parse(Array(pending[..<cut]), row: row, problem: problem)
                pending.removeSubrange(..<cut)
            }
        }
        if let decoder, !decoder.isFinished {
            throw Unreadable(description: "\(source): a gzip stream that is corrupt or cut short")
        }
        if parser.format == .text {
            try parser.scanText(pending, upTo: pending.count, row: row, problem: problem)
        } else {
            try parser.parse(pending, row: row, problem: problem)
        }
    }
}

/// Parses a list piece by piece, carrying what later pieces need: the format, the header of a table, the line count.
private struct PieceParser {
    var format: ListFormat?
    let source: String
    let columns: ListText.Columns
    /// The lines before the current piece.
    var linesBefore = 0
    /// A table's header, re-encoded as a CSV/TSV line put in front of each later piece.
    var header: String?

    init(format: ListFormat?, source: String, columns: ListText.Columns) {
        self.format = format ?? ListFormat.named(by: source)
        self.source = source
        self.columns = columns
    }

    /// Decides the format from the first bytes when neither the option nor the file's name did.
    mutating func decideFormat(_ bytes: [UInt8]) {
        guard format == nil, !bytes.isEmpty else { return }
        format = ListFormat.sniff(String(decoding: bytes.prefix(1 << 16), as: UTF8.self), urlColumn: columns.url)
    }

    /// Where to cut `bytes` after a whole line (outside quotes for a table); nil when there is no such place.
    func cut(_ bytes: [UInt8]) -> Int? {
        let table = format == .csv || format == .tsv || format == nil
        if !table { return bytes.lastIndex(of: 0x0A).map { $0 + 1 } }
        // A line end is outside quotes when the quotes before it are even in number ("" counts twice).
        var quotes = 0
        var last: Int?
        for (index, byte) in bytes.enumerated() {
            if byte == 0x22 {
                quotes += 1
            } else if byte == 0x0A && quotes % 2 == 0 {
                last = index + 1
            }
        }
        return last
    }

    /// Reads the plain-text lines of `bytes[..<end]` (whole lines).
    mutating func scanText(
        _ bytes: [UInt8], upTo end: Int, row: (ListText.ScannedLine) throws -> Void,
        problem: (ListText.Problem) -> Void
    ) throws {
        let first = linesBefore + 1
        let next = try bytes.withUnsafeBytes { buffer in
            try ListText.scanText(
                UnsafeRawBufferPointer(rebasing: buffer[..<end]), firstLine: first, line: row, problem: problem)
        }
        linesBefore = next - 1
    }

    mutating func parse(
        _ bytes: [UInt8], row: (ListText.ScannedLine) throws -> Void, problem: (ListText.Problem) -> Void
    ) throws {
        guard !bytes.isEmpty else { return }
        var text = String(decoding: bytes, as: UTF8.self)
        let chosen = format ?? ListFormat.sniff(text, urlColumn: columns.url)
        format = chosen
        var shift = linesBefore
        if chosen == .csv || chosen == .tsv, let header {
            text = header + "\n" + text
            shift -= 1
        }
        let parsed: (lines: [ListText.Line], problems: [ListText.Problem])
        do {
            parsed = try ListText.parse(text, format: chosen, columns: columns)
        } catch {
            throw ListRows.Unreadable(description: "\(source): \(error.description)")
        }
        for found in parsed.problems { problem(ListText.Problem(line: found.line + shift, reason: found.reason)) }
        for line in parsed.lines { try row(.parsed(line)) }
        if (chosen == .csv || chosen == .tsv) && header == nil {
            header = Self.header(of: text, separator: chosen == .csv ? "," : "\t")
        }
        linesBefore += bytes.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    /// The first non-blank record of `text`, quoted again as one line; nil when there is none.
    static func header(of text: String, separator: Unicode.Scalar) -> String? {
        for record in ListTable(text, separator: separator)
        where !record.fields.allSatisfy({ $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            return record.fields.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
                .joined(separator: String(separator))
        }
        return nil
    }
}
