extension ImageSignature {
    /// A short, single-line description of what a body that is not an image looks like, for error messages and logs.
    ///
    /// Guarantees: reads at most ``bytesNeeded`` leading bytes; never returns an empty string; never echoes control
    /// characters and quotes at most 32 bytes of the body. Examples: `empty body`, `HTML (starts with "<!DOCTYPE
    /// html")`, `JSON`, `XML (root element <rss>)`, `PDF document`, `text (starts with "Not Found")`,
    /// `unknown (first bytes 00 01 02 03 04 05 06 07 …)`. For a recognised image it names the format (`PNG image`).
    public static func describe(_ prefix: some Collection<UInt8>) -> String {
        let bytes = Array(prefix.prefix(bytesNeeded))
        guard !bytes.isEmpty else { return "empty body" }
        if let format = detect(bytes) { return "\(displayName(format)) image" }
        if let known = knownBinary(bytes) { return known }
        let (declaration, start) = MarkupScanner.decision(bytes)
        switch declaration {
        case .doctype("html"):
            return "HTML (starts with \(quotedStart(bytes, from: start)))"
        case .doctype(let name):
            return "XML (document type \(sanitised(name)))"
        case .element(let name) where htmlElements.contains(name.lowercased()):
            return "HTML (starts with \(quotedStart(bytes, from: start)))"
        case .element(let name):
            return "XML (root element <\(sanitised(name))>)"
        case .undecided:
            let quoted = quotedStart(bytes, from: start)
            return "markup with no root element in the first \(bytes.count) bytes (starts with \(quoted))"
        case .notMarkup:
            break
        }
        if start < bytes.count, bytes[start] == UInt8(ascii: "{") || bytes[start] == UInt8(ascii: "[") { return "JSON" }
        if start < bytes.count, isText(bytes) { return "text (starts with \(quotedStart(bytes, from: start)))" }
        if start == bytes.count { return "white space only (\(bytes.count) bytes)" }
        let hex = bytes.prefix(8).map { hexByte($0) }.joined(separator: " ")
        return "unknown (first bytes \(hex)\(bytes.count > 8 ? " …" : ""))"
    }

    /// Element names that only start HTML documents or fragments, never SVG or common XML vocabularies.
    private static let htmlElements: Set = [
        "html", "head", "body", "meta", "title", "div", "p", "script", "style",
        "link", "br", "h1", "h2", "h3", "center", "pre", "table", "form"
    ]

    private static func displayName(_ format: Format) -> String {
        switch format {
        case .jpegXL: "JPEG XL"
        case .webp: "WebP"
        case .heic: "HEIC/HEIF"
        case .ico: "ICO/CUR"
        default: format.rawValue.uppercased()
        }
    }

    /// Common non-image containers that error pages, redirects to downloads or wrong links produce.
    private static func knownBinary(_ b: [UInt8]) -> String? {
        if has(b, Array("%PDF-".utf8)) { return "PDF document" }
        if has(b, Array("PK".utf8) + [0x03, 0x04]) { return "ZIP archive" }
        if has(b, [0x1F, 0x8B]) { return "gzip-compressed data" }
        if has(b, [0x1A, 0x45, 0xDF, 0xA3]) { return "Matroska/WebM media" }
        if has(b, Array("OggS".utf8)) { return "Ogg media" }
        if has(b, Array("RIFF".utf8)), b.count >= 12 { return "RIFF \(sanitised(brand(b, at: 8))) data" }
        if let brands = fileTypeBrands(b), let major = brands.first { return "ISO media (brand \(sanitised(major)))" }
        return nil
    }

    /// No control characters other than tab, line feed, form feed and carriage return (UTF-8 is allowed).
    private static func isText(_ b: [UInt8]) -> Bool {
        b.allSatisfy { $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 || $0 == 0x0A || $0 == 0x0C || $0 == 0x0D }
    }

    /// The body from `start` to the first `>` or line end, at most 32 bytes, in double quotes.
    private static func quotedStart(_ b: [UInt8], from start: Int) -> String {
        var end = start
        while end < b.count, end - start < 32, ![0x3E, 0x0A, 0x0D].contains(b[end]) { end += 1 }
        let cut = end - start == 32 && end < b.count && b[end] != 0x3E
        return "\"" + sanitised(String(decoding: b[start..<end], as: UTF8.self)) + (cut ? "…\"" : "\"")
    }

    /// At most 32 scalars of `text`, control characters shown as `?` (undecodable bytes are already U+FFFD).
    private static func sanitised(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(32).map {
                    $0.properties.generalCategory == .control ? "?" : $0
                }))
    }

    private static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
