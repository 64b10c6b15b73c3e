import Foundation
import ImgfsModel

/// The forms of URL list `imgfs list add` reads, and how it tells them apart.
///
/// Guarantees: a file name ending in `.csv`, `.tsv`, `.jsonl` or `.ndjson` (optionally followed by `.gz`) names its
/// format; otherwise the text decides: a first non-blank line that starts with `{` is JSON Lines, one whose fields
/// (split at commas, else tabs) include the URL column's name is CSV (TSV), anything else is plain text.
public enum ListFormat: String, CaseIterable, Sendable {
    /// One URL a line, optionally `URL<TAB>name`; `#` starts a comment.
    case text
    /// Comma-separated values with a header row.
    case csv
    /// Tab-separated values with a header row.
    case tsv
    /// One JSON object a line.
    case jsonl

    /// The format the file name `path` says, or nil.
    public static func named(by path: String) -> ListFormat? {
        var name = path.lowercased()
        if name.hasSuffix(".gz") { name.removeLast(3) }
        if name.hasSuffix(".csv") { return .csv }
        if name.hasSuffix(".tsv") || name.hasSuffix(".tab") { return .tsv }
        if name.hasSuffix(".jsonl") || name.hasSuffix(".ndjson") { return .jsonl }
        return nil
    }

    /// The format `text` looks like, for a list whose name says none (standard input, `.txt`).
    public static func sniff(_ text: String, urlColumn: String = "url") -> ListFormat {
        let firstLine =
            text.split(whereSeparator: \.isNewline).lazy
            .map { $0.trimmingCharacters(in: CharacterSet.whitespaces.union(["\u{FEFF}"])) }
            .first { !$0.isEmpty } ?? ""
        if firstLine.hasPrefix("{") { return .jsonl }
        for (format, separator) in [(ListFormat.csv, ","), (.tsv, "\t")] {
            let fields = firstLine.split(separator: separator, omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased()
            }
            if fields.count > 1, fields.contains(urlColumn.lowercased()) { return format }
        }
        return .text
    }
}
