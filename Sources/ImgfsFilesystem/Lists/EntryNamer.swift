import Foundation
import ImgfsModel

/// Names the entries of a list directory: `<index>-<stem>[.<extension>]`, e.g. `00042-green-photo.jpg`.
///
/// Guarantees: the index is 1-based and zero-padded to the same width for the whole list (at least 5 digits), so names
/// sort in list order; the stem is the sanitized last path segment of the URL (or the name given in the list);
/// every name is valid UTF-8, at most 255 bytes, and holds no `/`, no control character and no leading dot. With no
/// known image extension the name has none.
public enum EntryNamer {
    /// The longest stem kept, in bytes.
    static let maximumStem = 120

    /// The name of entry `index` (0-based) of a list of `count` entries.
    public static func name(
        index: Int, count: Int, url: ImageURL, given: String? = nil,
        knownExtension: String? = nil
    ) -> String {
        let width = max(5, String(count).count)
        let number = String(index + 1)
        let padded = String(repeating: "0", count: max(0, width - number.count)) + number
        let source = given ?? lastSegment(of: url)
        var (stem, ownExtension) = splitExtension(source)
        stem = sanitize(stem)
        let fileExtension = ownExtension ?? ImageExtension.fromPath(of: url) ?? knownExtension
        let base = stem.isEmpty ? padded : "\(padded)-\(stem)"
        return fileExtension.map { "\(base).\($0)" } ?? base
    }

    /// What follows the index in the name of `url` (`-stem.ext`, or nothing): ``name(index:count:suffix:)`` puts an
    /// index before it, so a long list is named in one pass over its URLs and a second over these suffixes.
    public static func suffix(url: ImageURL, given: String? = nil, knownExtension: String? = nil) -> String {
        String(name(index: 0, count: 1, url: url, given: given, knownExtension: knownExtension).dropFirst(5))
    }

    /// The name of entry `index` (0-based) of a list of `count` entries, whose ``suffix(url:given:knownExtension:)``
    /// is `suffix`.
    public static func name(index: Int, count: Int, suffix: String) -> String {
        let width = max(5, String(count).count)
        let number = String(index + 1)
        return String(repeating: "0", count: max(0, width - number.count)) + number + suffix
    }

    /// The URL's last path segment, percent-decoded when that gives UTF-8 ("" for a bare host).
    static func lastSegment(of url: ImageURL) -> String {
        // On the UTF-8 bytes: a URL is ASCII up to its host, and `?`, `/` and `:` are never inside a multi-byte
        // character, so every cut below is on a character boundary.
        let path = url.resourceKey.utf8
        let end = path.firstIndex(of: UInt8(ascii: "?")) ?? path.endIndex
        var schemeEnd: String.Index?
        var index = path.startIndex
        while index < end {
            if path[index] == UInt8(ascii: ":"), path[path.index(after: index)...].starts(with: "//".utf8) {
                schemeEnd = path.index(index, offsetBy: 3)
                break
            }
            index = path.index(after: index)
        }
        guard let schemeEnd, schemeEnd <= end else { return "" }
        guard let slash = path[schemeEnd..<end].firstIndex(of: UInt8(ascii: "/")) else { return "" }
        let segments = path[slash..<end].split(separator: UInt8(ascii: "/"))
        guard let last = segments.last else { return "" }
        let segment = String(Substring(last))
        guard last.contains(UInt8(ascii: "%")) else { return segment }
        return segment.removingPercentEncoding ?? segment
    }

    /// `photo.JPG` -> (`photo`, `jpg`) when the extension names an image type, else (`text`, nil).
    static func splitExtension(_ text: String) -> (String, String?) {
        guard let dot = text.lastIndex(of: "."), dot != text.startIndex else { return (text, nil) }
        let candidate = text[text.index(after: dot)...].lowercased()
        guard ImageExtension.isKnown(candidate) else { return (text, nil) }
        return (String(text[..<dot]), candidate)
    }

    /// Letters, digits, `-`, `_` and `.` kept; every other run becomes one `-`; no leading or trailing `-`/`.`;
    /// cut to ``maximumStem`` bytes on a character boundary.
    static func sanitize(_ text: String) -> String {
        var result = ""
        var pendingDash = false
        for scalar in text.unicodeScalars {
            let keep =
                scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "-_.".unicodeScalars.contains(scalar)
            if keep && scalar != "-" {
                if pendingDash && !result.isEmpty { result.unicodeScalars.append("-") }
                pendingDash = false
                result.unicodeScalars.append(scalar)
            } else {
                pendingDash = true
            }
        }
        while let first = result.first, first == "." || first == "-" { result.removeFirst() }
        while result.utf8.count > maximumStem { result.removeLast() }
        while let last = result.last, last == "." || last == "-" { result.removeLast() }
        return result
    }
}
