/// A `Content-Range: bytes first-last/total` header of a 206 answer.
///
/// Guarantees: only the satisfied-range form with `first <= last` parses; `total` is nil when the server wrote `*`,
/// and otherwise greater than `last`.
public struct ContentRange: Equatable, Sendable {
    /// The first byte of the body, counted in the whole representation.
    public var first: Int
    /// The last byte of the body (inclusive).
    public var last: Int
    /// The size of the whole representation, when the server said it.
    public var total: Int?

    /// The range of bytes `first` through `last` of `total`.
    public init(first: Int, last: Int, total: Int?) {
        self.first = first
        self.last = last
        self.total = total
    }

    /// Parses the header value (`bytes 0-51203/102408`); nil for anything else.
    public init?(_ value: String) {
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).split(separator: "/", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let bounds = spec[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), first <= last
        else { return nil }
        let total: Int?
        if spec[1] == "*" {
            total = nil
        } else {
            guard let value = Self.number(spec[1]), value > last else { return nil }
            total = value
        }
        self.init(first: first, last: last, total: total)
    }

    /// Bytes in this range.
    public var count: Int { last - first + 1 }

    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
