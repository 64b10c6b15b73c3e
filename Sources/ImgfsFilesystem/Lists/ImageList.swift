import ImgfsModel

/// One URL list as a directory: its entries in list order, each with its file name.
///
/// Guarantees: names are unique within the list; looking a name up costs one hash lookup; reading a stored list
/// parses no URL (a list of 100,000 entries lists at once): each entry's URL is parsed when it is used.
public struct ImageList: Sendable {
    /// One file of the directory.
    public struct Entry: Sendable, Equatable {
        /// The entry's file name in the list's directory.
        public let name: String
        /// The URL's text as stored.
        public let urlText: String

        /// The entry `name` for `url`.
        public init(name: String, url: ImageURL) {
            self.name = name
            self.urlText = url.string
        }

        init(name: String, urlText: String) {
            self.name = name
            self.urlText = urlText
        }

        /// The URL, its cache key computed under `keying` (the mount's rules now), or nil when the stored text is not
        /// a valid image URL (a list file edited by hand).
        public func url(keying: (any CacheKeying)?) -> ImageURL? { try? ImageURL(urlText, keying: keying) }
    }

    /// The list's name: its directory's name under `lists/`.
    public let name: String
    /// The entries, in list order.
    public let entries: [Entry]
    private let positions: [String: Int]

    /// The list `name` of `entries` (a name that repeats is found at its first entry).
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
        ([Self.header] + entries.map { "\($0.name)\t\($0.urlText)" }).joined(separator: "\n") + "\n"
    }

    /// A list read back from its stored text (lines that do not parse are skipped).
    public init(name: String, storedText: String) {
        let entries = storedText.split(separator: "\n").compactMap { line -> Entry? in
            guard !line.hasPrefix("#"), let tab = line.firstIndex(of: "\t") else { return nil }
            return Entry(name: String(line[..<tab]), urlText: String(line[line.index(after: tab)...]))
        }
        self.init(name: name, entries: entries)
    }
}
