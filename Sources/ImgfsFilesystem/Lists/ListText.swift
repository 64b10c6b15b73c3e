import Foundation
import ImgfsModel

/// The text `imgfs list add` reads: one URL a line, optionally `URL<TAB>file name`; blank lines and lines starting
/// with `#` are skipped, whitespace around each field is dropped.
///
/// Guarantees: every line that is neither blank, a comment nor a valid URL is reported with its 1-based line number
/// and the reason; the valid lines are kept in order, duplicates included.
public enum ListText {
    /// One valid line.
    public struct Line: Sendable, Equatable {
        /// The image's URL.
        public let url: ImageURL
        /// The file name given after a tab; nil: a name is made from the URL.
        public let givenName: String?

        /// The line of `url`, named `givenName` when given.
        public init(url: ImageURL, givenName: String?) {
            self.url = url
            self.givenName = givenName
        }
    }

    /// One rejected line.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// The 1-based line number.
        public let line: Int
        /// Why the line was rejected.
        public let reason: String
        /// `line <n>: <reason>`.
        public var description: String { "line \(line): \(reason)" }

        /// The problem `reason` on line `line`.
        public init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }
    }

    /// `text` without whitespace around it; Foundation's trimming only when an end is not plain (most lines are not).
    static func trimmed(_ text: Substring) -> String {
        func plain(_ character: Character?) -> Bool {
            guard let character, let ascii = character.asciiValue else { return false }
            return ascii > 0x20 && ascii != 0x7F
        }
        if plain(text.first) && plain(text.last) { return String(text) }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The valid lines of `text`, in order, and the rejected ones.
    public static func parse(_ text: String) -> (lines: [Line], problems: [Problem]) {
        var lines: [Line] = []
        var problems: [Problem] = []
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            switch judge(raw, number: number + 1) {
            case .valid(let line): lines.append(line)
            case .rejected(let problem): problems.append(problem)
            case nil: continue
            }
        }
        return (lines, problems)
    }

    /// A line that is not blank: valid or rejected.
    enum Judged {
        case valid(Line)
        case rejected(Problem)
    }

    /// What the line `raw` (line `number`, without its line end) is: a valid line, a problem, or nil for a blank line
    /// or a comment.
    static func judge(_ raw: Substring, number: Int) -> Judged? {
        let fields = raw.split(separator: "\t", maxSplits: 1).map(Self.trimmed)
        guard let first = fields.first, !first.isEmpty, !first.hasPrefix("#") else { return nil }
        do {
            let url = try ImageURL(first)
            let given = fields.count > 1 && !fields[1].isEmpty ? fields[1] : nil
            return .valid(Line(url: url, givenName: given))
        } catch {
            return .rejected(Problem(line: number, reason: "\(error): \(first.prefix(200))"))
        }
    }
}
