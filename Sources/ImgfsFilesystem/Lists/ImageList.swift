import ImgfsModel
import ImgfsStore

/// One URL list as a directory: its entries in list order, each with its file name.
///
/// Guarantees: names are unique within the list; looking a name up costs one hash lookup; reading a stored list
/// parses no URL (each entry's URL is parsed when it is used) and keeps no string per entry: the list's file is mapped
/// and an entry is read from it when it is asked for, so a loaded list costs about 4 bytes of memory per entry, and
/// 4 to 8 more from its first lookup by name, beside its file's pages (which the system may drop while the list is not
/// read). Lines past the first 4 GiB of a list's file are not read.
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

    /// The entries of a list, read from its stored lines when they are asked for.
    public struct Entries: RandomAccessCollection, Equatable, ExpressibleByArrayLiteral, Sendable {
        let storage: ListStorage

        /// The first position, 0.
        public var startIndex: Int { 0 }
        /// The number of entries.
        public var endIndex: Int { storage.count }

        /// The entry at `position`.
        public subscript(position: Int) -> Entry { storage.entry(position) }

        /// The entries of an array literal.
        public init(arrayLiteral elements: Entry...) { storage = ListStorage(entries: elements) }

        init(storage: ListStorage) { self.storage = storage }

        /// Whether both hold the same entries in the same order.
        public static func == (lhs: Entries, rhs: Entries) -> Bool { lhs.elementsEqual(rhs) }
    }

    /// The list's name: its directory's name under `lists/`.
    public let name: String
    /// The entries, in list order.
    public let entries: Entries

    /// The list `name` of `entries` (a name that repeats is found at its first entry).
    public init(name: String, entries: [Entry]) {
        self.name = name
        self.entries = Entries(storage: ListStorage(entries: entries))
    }

    /// The position of the entry called `name`.
    public func index(of name: String) -> Int? { entries.storage.index(of: name) }

    /// The name of the entry at `position`, read without its URL (a listing needs no more).
    public func name(at position: Int) -> String { entries.storage.name(position) }

    /// The name of the entry at `position` and a 64-bit FNV-1a hash of it (a listing's inode numbers), read in one
    /// pass without its URL.
    public func nameAndHash(at position: Int) -> (name: String, hash: UInt64) { entries.storage.nameAndHash(position) }

    /// ``EntryFacts/hash(_:)`` of the URL text of the entry at `position`, read without making a String.
    public func urlHash(at position: Int) -> UInt64 { entries.storage.urlHash(position) }

    // MARK: - The stored form: a header line, then `name<TAB>url` a line

    static let header = "# imgfs list v1"

    /// The text written to the list's file.
    public var storedText: String {
        ([Self.header] + entries.map { "\($0.name)\t\($0.urlText)" }).joined(separator: "\n") + "\n"
    }

    /// A list read back from its stored text (lines that do not parse are skipped).
    public init(name: String, storedText: String) {
        self.name = name
        entries = Entries(storage: ListStorage(bytes: .owned(Array(storedText.utf8))))
    }

    /// A list read from its mapped file (lines that do not parse are skipped).
    init(name: String, file: MappedFile) {
        self.name = name
        entries = Entries(storage: ListStorage(bytes: .mapped(file)))
    }
}
