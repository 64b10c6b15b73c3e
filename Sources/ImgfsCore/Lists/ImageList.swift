/// One URL list as a directory: its entries in list order, each with its file name.
///
/// Guarantees: names are unique within the list; looking a name up costs one hash lookup.
public struct ImageList: Sendable {
    /// One file of the directory.
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let url: ImageURL

        public init(name: String, url: ImageURL) {
            self.name = name
            self.url = url
        }
    }

    public let name: String
    public let entries: [Entry]
    private let positions: [String: Int]

    public init(name: String, entries: [Entry]) {
        self.name = name
        self.entries = entries
        positions = Dictionary(entries.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The position of the entry called `name`.
    public func index(of name: String) -> Int? { positions[name] }

    // MARK: - The stored form: a header line, then `name<TAB>url` a line

    static let header = "# imgfs list v1"

    /// The text written to the list's file.
    public var storedText: String {
        ([Self.header] + entries.map { "\($0.name)\t\($0.url.string)" }).joined(separator: "\n") + "\n"
    }

    /// A list read back from its stored text (lines that do not parse are skipped).
    public init(name: String, storedText: String) {
        let entries = storedText.split(separator: "\n").compactMap { line -> Entry? in
            guard !line.hasPrefix("#"), let tab = line.firstIndex(of: "\t"),
                  let url = try? ImageURL(String(line[line.index(after: tab)...])) else { return nil }
            return Entry(name: String(line[..<tab]), url: url)
        }
        self.init(name: name, entries: entries)
    }
}
