import ImgfsModel

/// Records of a CSV (RFC 4180) or TSV text: fields separated by `separator`, records by LF or CRLF; a field in double
/// quotes may hold separators, line breaks and `""` for a quote. A byte-order mark at the start is dropped.
///
/// Guarantees: never fails: every record comes with the 1-based line it starts on, and a quote left open at the end
/// of the text makes the last record a problem (`unterminated`), never a merge of the rest into one field.
public struct ListTable: Sequence {
    /// One record: its fields and the line it starts on.
    public struct Record: Sendable, Equatable {
        /// The 1-based line of the text the record starts on.
        public let line: Int
        /// The fields, unquoted.
        public let fields: [String]
        /// Whether the record ended inside an open quote (the text ended first).
        public let unterminated: Bool
    }

    /// The whole text.
    public let text: String
    /// What separates fields: `,` for CSV, a tab for TSV.
    public let separator: Unicode.Scalar

    /// The records of `text`, with fields separated by `separator`.
    public init(_ text: String, separator: Unicode.Scalar) {
        self.text = text
        self.separator = separator
    }

    /// An iterator over the records, from the first.
    public func makeIterator() -> Iterator { Iterator(text: text, separator: separator) }

    /// Reads records one at a time.
    public struct Iterator: IteratorProtocol {
        private var scalars: String.UnicodeScalarView.Iterator
        private let separator: Unicode.Scalar
        private var line = 1
        private var pending: Unicode.Scalar?
        private var first = true

        init(text: String, separator: Unicode.Scalar) {
            scalars = text.unicodeScalars.makeIterator()
            self.separator = separator
        }

        private mutating func nextScalar() -> Unicode.Scalar? {
            if let pending {
                self.pending = nil
                return pending
            }
            return scalars.next()
        }

        /// The next record, or nil at the end of the text.
        public mutating func next() -> Record? {
            var fields: [String] = []
            var field = String.UnicodeScalarView()
            var quoted = false
            var started = false
            let start = line
            while var scalar = nextScalar() {
                if first {
                    first = false
                    if scalar == "\u{FEFF}" { continue }
                }
                started = true
                if quoted {
                    if scalar == "\"" {
                        guard let following = nextScalar() else {
                            quoted = false
                            break
                        }
                        if following == "\"" {
                            field.append("\"")
                            continue
                        }
                        quoted = false
                        scalar = following
                    } else {
                        if scalar == "\n" { line += 1 }
                        field.append(scalar)
                        continue
                    }
                }
                switch scalar {
                case separator:
                    fields.append(String(field))
                    field = String.UnicodeScalarView()
                case "\"" where field.isEmpty:
                    quoted = true
                case "\r":
                    guard let following = nextScalar() else { continue }
                    if following != "\n" { pending = following }
                    line += 1
                    fields.append(String(field))
                    return Record(line: start, fields: fields, unterminated: false)
                case "\n":
                    line += 1
                    fields.append(String(field))
                    return Record(line: start, fields: fields, unterminated: false)
                default:
                    field.append(scalar)
                }
            }
            guard started else { return nil }
            fields.append(String(field))
            return Record(line: start, fields: fields, unterminated: quoted)
        }
    }
}
