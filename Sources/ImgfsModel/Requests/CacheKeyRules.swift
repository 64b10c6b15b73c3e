/// Which query parameters are left out of a URL's cache key (signatures, expiry stamps, tracking parameters).
///
/// Guarantees: only the query of the key text changes: the remaining parameters keep their order and bytes, and a URL
/// without dropped parameters keeps its text exactly. The request itself always uses the URL as given.
public struct CacheKeyRules: Sendable, Equatable {
    /// Parameter names or globs (`*` matches any run of characters), compared case-insensitively.
    public var dropped: [String]

    /// Rules that drop the parameters named or matched by `dropped`.
    public init(dropped: [String] = []) {
        self.dropped = dropped
    }

    /// `resource` (a URL without fragment) with the dropped parameters removed from its query.
    public func keyText(for resource: String) -> String {
        guard !dropped.isEmpty, let question = resource.firstIndex(of: "?") else { return resource }
        let query = resource[resource.index(after: question)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: false)
        let kept = parameters.filter { parameter in
            let name = String(parameter.prefix { $0 != "=" })
            return !dropped.contains { Self.glob($0, matches: Self.decoded(name)) }
        }
        guard kept.count != parameters.count else { return resource }
        let base = String(resource[..<question])
        return kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")
    }

    /// Whether `pattern` (with `*` wildcards) matches all of `text`, ignoring case.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        let pattern = Array(pattern.lowercased()), text = Array(text.lowercased())
        var p = 0, t = 0, star = -1, resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "*" {
                star = p
                resume = t
                p += 1
            } else if p < pattern.count, pattern[p] == text[t] {
                p += 1
                t += 1
            } else if star >= 0 {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// A parameter name with `%XX` escapes decoded (as written when it cannot be).
    private static func decoded(_ name: String) -> String {
        guard name.contains("%") else { return name }
        var bytes: [UInt8] = []
        var index = name.utf8.startIndex
        let utf8 = name.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            let next = utf8.index(after: index)
            if byte == UInt8(ascii: "%"), utf8.distance(from: next, to: utf8.endIndex) >= 2,
                let value = UInt8(
                    String(decoding: utf8[next..<utf8.index(next, offsetBy: 2)], as: UTF8.self),
                    radix: 16)
            {
                bytes.append(value)
                index = utf8.index(next, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = next
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
