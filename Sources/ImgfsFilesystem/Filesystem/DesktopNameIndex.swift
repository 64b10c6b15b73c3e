import ImgfsModel

/// The names of a list's or host's entries by the MD5 of each name, as a shared thumbnail repository names their
/// thumbnails (`.sh_thumbnails/<size>/<md5 of name>.png`).
///
/// Guarantees: built once per loaded list (a list loaded again, edited or not, is hashed again) and per call for a
/// host's view; never reads a URL or a cache; bounded (the index of at most ``listLimit`` lists is kept).
final class DesktopNameIndex: Sendable {
    /// One list's names by MD5, and what they were built from.
    private struct Built {
        let count: Int
        let first: String?
        let last: String?
        let storage: ObjectIdentifier
        let byDigest: [String: String]
    }

    private let built = Locked<[String: Built]>([:])
    static let listLimit = 64

    /// The MD5 file name (`<32 hex digits>.png`) of an entry called `name`.
    static func fileName(of name: String) -> String { MD5.hex(of: Array(name.utf8)) + ".png" }

    /// The names of the entries of list `list` (as loaded now) by the MD5 file name of each; the same loaded list is
    /// hashed once.
    func names(ofList list: String, _ entries: ImageList.Entries) -> [String: String] {
        let storage = ObjectIdentifier(entries.storage)
        if let known = built.withLock({ $0[list] }), known.count == entries.count, known.first == entries.first?.name,
            known.last == entries.last?.name, known.storage == storage
        {
            return known.byDigest
        }
        let byDigest = Self.names(of: entries.lazy.map(\.name))
        let entry = Built(
            count: entries.count, first: entries.first?.name, last: entries.last?.name, storage: storage,
            byDigest: byDigest)
        built.withLock { built in
            if built.count >= Self.listLimit { built.removeAll() }
            built[list] = entry
        }
        return byDigest
    }

    /// `names` by the MD5 file name of each.
    static func names(of names: some Sequence<String>) -> [String: String] {
        var byDigest: [String: String] = [:]
        for name in names { byDigest[fileName(of: name)] = name }
        return byDigest
    }
}
