import Foundation
import ImgfsModel

/// `lists/NAME/.index.jsonl` and `imgfs list show`: one JSON object a line per entry, in list order, with what the
/// list knows of it: `{"name", "url", "size", "format", "width", "height", "orientation", "status", "reason"}`.
///
/// Guarantees: every line is one JSON object with all nine keys (unknown values are `null`), so pandas
/// (`read_json(lines=True)`) gets the same columns whatever is known; `status` is `ok`, `failed` or `unknown` (never
/// looked at); strings are escaped as JSON requires (quotes, backslashes, control characters).
public enum ListIndex {
    /// The file's name in a list's directory (hidden, and no entry's name: entry names never start with a dot).
    public static let fileName = ".index.jsonl"

    /// The line of `entry` with its `facts`, ending in a newline.
    public static func line(_ entry: ImageList.Entry, facts: EntryFacts?) -> String {
        func string(_ text: String?) -> String { text.map { "\"\(escaped($0))\"" } ?? "null" }
        func number(_ value: Int?) -> String { value.map(String.init) ?? "null" }
        let fields = [
            ("name", string(entry.name)), ("url", string(entry.urlText)), ("size", number(facts?.size)),
            ("format", string(facts?.format?.rawValue)), ("width", number(facts?.width)),
            ("height", number(facts?.height)), ("orientation", number(facts?.orientation)),
            ("status", string(facts?.status.name ?? "unknown")), ("reason", string(facts?.reason))
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}\n"
    }

    /// The whole file for `list` with the facts in `facts`.
    public static func render(_ list: ImageList, facts: ListFacts?) -> [UInt8] {
        var text = ""
        for (index, entry) in list.entries.enumerated() {
            text += line(entry, facts: facts?.facts(at: index, urlText: entry.urlText))
        }
        return Array(text.utf8)
    }

    /// `text` with `"`, `\` and control characters escaped for a JSON string.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0 == "\"" || $0 == "\\" || $0.value < 0x20 }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20: result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
