import Foundation
import ImgfsModel

/// Lists as data sets: CSV and TSV with a header row, and JSON Lines.
///
/// Guarantees: every row that holds no valid URL (a missing or empty URL field, a record cut by an open quote, a line
/// that is not a JSON object) is reported with the line it starts on and skipped; the other rows are kept in order.
/// A table whose header has no URL column (or no name column that was asked for by name) is refused as a whole.
extension ListText {
    /// Which columns (CSV, TSV) or keys (JSON Lines) hold an entry's URL and, optionally, its name.
    public struct Columns: Sendable, Equatable {
        /// The URL column (or key); `url` unless told otherwise.
        public var url: String
        /// The name column; nil: a column called `name` if there is one.
        public var name: String?

        /// The columns `url` and, when given, `name`.
        public init(url: String = "url", name: String? = nil) {
            self.url = url
            self.name = name
        }
    }

    /// Why a list cannot be read at all.
    public struct Unreadable: Error, CustomStringConvertible {
        /// Why, in one line.
        public let description: String
    }

    /// The lines of `text` read as `format`.
    public static func parse(
        _ text: String, format: ListFormat, columns: Columns = Columns()
    ) throws(Unreadable) -> (lines: [Line], problems: [Problem]) {
        switch format {
        case .text: return parse(text)
        case .csv: return try parseTable(ListTable(text, separator: ","), columns: columns)
        case .tsv: return try parseTable(ListTable(text, separator: "\t"), columns: columns)
        case .jsonl: return parseJSONLines(text, columns: columns)
        }
    }

    private static func parseTable(
        _ table: ListTable, columns: Columns
    ) throws(Unreadable) -> (lines: [Line], problems: [Problem]) {
        var records = table.makeIterator()
        var header: ListTable.Record?
        while let record = records.next() {
            if !isBlank(record) {
                header = record
                break
            }
        }
        guard let header else { return ([], []) }
        let names = header.fields.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let urlIndex = names.firstIndex(of: columns.url.lowercased()) else {
            throw Unreadable(
                description: "the header has no column \"\(columns.url)\" (it has \(names.joined(separator: ", "))); "
                    + "name the URL column with --url-column")
        }
        let nameIndex = names.firstIndex(of: (columns.name ?? "name").lowercased())
        if let asked = columns.name, nameIndex == nil {
            throw Unreadable(description: "the header has no column \"\(asked)\" (--name-column)")
        }
        var lines: [Line] = []
        var problems: [Problem] = []
        while let record = records.next() {
            guard !isBlank(record) else { continue }
            guard !record.unterminated else {
                problems.append(Problem(line: record.line, reason: "a quoted field is not closed before the end"))
                continue
            }
            guard urlIndex < record.fields.count else {
                problems.append(
                    Problem(line: record.line, reason: "\(record.fields.count) fields, no \"\(columns.url)\" field"))
                continue
            }
            let given = nameIndex.flatMap { $0 < record.fields.count ? record.fields[$0] : nil }
            append(record.fields[urlIndex], name: given, line: record.line, to: &lines, problems: &problems)
        }
        return (lines, problems)
    }

    private static func parseJSONLines(_ text: String, columns: Columns) -> (lines: [Line], problems: [Problem]) {
        var lines: [Line] = []
        var problems: [Problem] = []
        let nameKey = columns.name ?? "name"
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: CharacterSet.whitespaces.union(["\u{FEFF}"]))
            guard !line.isEmpty else { continue }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                problems.append(Problem(line: number + 1, reason: "not a JSON object: \(line.prefix(80))"))
                continue
            }
            guard let url = object[columns.url] as? String else {
                problems.append(Problem(line: number + 1, reason: "no \"\(columns.url)\" string"))
                continue
            }
            append(url, name: object[nameKey] as? String, line: number + 1, to: &lines, problems: &problems)
        }
        return (lines, problems)
    }

    /// Adds the row of `urlText` (and its `name`) as a line, or its problem.
    private static func append(
        _ urlText: String, name: String?, line: Int, to lines: inout [Line], problems: inout [Problem]
    ) {
        let text = urlText.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return problems.append(Problem(line: line, reason: "the URL field is empty")) }
        do {
            let given = name?.trimmingCharacters(in: .whitespaces)
            lines.append(Line(url: try ImageURL(text), givenName: given?.isEmpty == false ? given : nil))
        } catch {
            problems.append(Problem(line: line, reason: "\(error): \(text.prefix(200))"))
        }
    }

    private static func isBlank(_ record: ListTable.Record) -> Bool {
        record.fields.allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
}
