extension ImageSignature {
    /// Finds the root element (or a non-SVG document type) of an XML or HTML text prefix, stepping over what may
    /// precede the root: a UTF-8 byte order mark, white space, the XML declaration and processing instructions,
    /// comments, and `<!DOCTYPE svg …>` with its internal subset.
    ///
    /// It never reads past the bytes it is given: a construct that is not closed within them gives `.undecided`.
    struct MarkupScanner {
        /// What the text starts with, as far as choosing between SVG, HTML, other XML and non-markup goes.
        enum Declaration: Equatable {
            /// The root element's name, exactly as written (`svg`, `svg:svg`, `html`, `rss`).
            case element(String)
            /// A document type declaration for something other than SVG; the name lower-cased (`html`).
            case doctype(String)
            /// Markup whose root element does not start within the bytes.
            case undecided
            /// Empty, white space only, or text that does not start like XML or HTML.
            case notMarkup

            /// Whether this is an `svg` root element, with or without a namespace prefix.
            var isSVGRoot: Bool {
                guard case .element(let name) = self else { return false }
                return name == "svg" || name.hasSuffix(":svg")
            }
        }

        private let bytes: [UInt8]
        private var index = 0
        /// Where the construct that decided the answer starts (or where the content starts).
        private var decisionStart = 0

        private init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// The first declaration of `bytes` that decides what kind of document it is.
        static func firstDeclaration(_ bytes: [UInt8]) -> Declaration {
            var scanner = MarkupScanner(bytes)
            return scanner.scan()
        }

        /// The first declaration of `bytes` that decides what kind of document it is, and the offset where that
        /// declaration starts; for `.notMarkup` and `.undecided`, the offset after the BOM and leading white space.
        static func decision(_ bytes: [UInt8]) -> (declaration: Declaration, offset: Int) {
            var scanner = MarkupScanner(bytes)
            let declaration = scanner.scan()
            return (declaration, scanner.decisionStart)
        }

        private mutating func scan() -> Declaration {
            skipByteOrderMark()
            skipWhiteSpace()
            decisionStart = index
            while true {
                skipWhiteSpace()
                guard index < bytes.count else { return index == decisionStart ? .notMarkup : .undecided }
                guard bytes[index] == UInt8(ascii: "<") else { return .notMarkup }
                let start = index
                if at("<?") {
                    guard skip(past: "?>") else { return .undecided }
                } else if at("<!--") {
                    guard skip(past: "-->") else { return .undecided }
                } else if atCaseInsensitive("<!doctype") {
                    index += 9
                    skipWhiteSpace()
                    let name = readName().lowercased()
                    guard index < bytes.count else { return .undecided }
                    guard name == "svg" else {
                        decisionStart = start
                        return .doctype(name)
                    }
                    guard skipDoctypeRest() else { return .undecided }
                } else {
                    index += 1
                    guard index < bytes.count else { return .undecided }
                    guard Self.isNameStart(bytes[index]) else { return .notMarkup }
                    let name = readName()
                    guard index < bytes.count else { return .undecided }
                    decisionStart = start
                    return .element(name)
                }
            }
        }

        private mutating func skipByteOrderMark() {
            if ImageSignature.has(bytes, [0xEF, 0xBB, 0xBF]) { index = 3 }
        }

        private mutating func skipWhiteSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        private func at(_ text: StaticString) -> Bool {
            text.withUTF8Buffer { bytes[index...].starts(with: $0) }
        }

        /// Whether the bytes at the cursor spell `lowercased` in ASCII, ignoring case.
        private func atCaseInsensitive(_ lowercased: String) -> Bool {
            let wanted = Array(lowercased.utf8)
            guard bytes.count >= index + wanted.count else { return false }
            return zip(bytes[index...], wanted).allSatisfy { byte, want in
                (byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte) == want
            }
        }

        /// Moves past the next occurrence of `terminator`; false (cursor unchanged) when it is not in the bytes.
        private mutating func skip(past terminator: StaticString) -> Bool {
            var probe = self
            while probe.index < bytes.count {
                if probe.at(terminator) {
                    index = probe.index + terminator.utf8CodeUnitCount
                    return true
                }
                probe.index += 1
            }
            return false
        }

        /// Moves past the `>` that ends a document type declaration, stepping over quoted identifiers and an
        /// internal subset in brackets (with its comments). False when the declaration does not end within the bytes.
        private mutating func skipDoctypeRest() -> Bool {
            var quote: UInt8?
            var inSubset = false
            while index < bytes.count {
                if quote == nil, inSubset, at("<!--") {
                    guard skip(past: "-->") else { return false }
                    continue
                }
                let byte = bytes[index]
                index += 1
                if let open = quote {
                    if byte == open { quote = nil }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: "[") {
                    inSubset = true
                } else if byte == UInt8(ascii: "]") {
                    inSubset = false
                } else if byte == UInt8(ascii: ">"), !inSubset {
                    return true
                }
            }
            return false
        }

        /// Reads an element or document type name: everything up to white space, `>`, `/`, `[` or the end.
        private mutating func readName() -> String {
            let start = index
            while index < bytes.count, ![0x20, 0x09, 0x0A, 0x0D, 0x3E, 0x2F, 0x5B].contains(bytes[index]) { index += 1 }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// ASCII letters, `_`, `:` and any non-ASCII byte may start an XML name.
        private static func isNameStart(_ byte: UInt8) -> Bool {
            (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A || byte == 0x5F || byte == 0x3A || byte >= 0x80
        }
    }
}
