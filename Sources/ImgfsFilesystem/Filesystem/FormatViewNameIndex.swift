import ImgfsModel
import ImgfsPipeline

/// The names a list's or host's entries have under a format view (`fmt/jpeg/lists/NAME/`, `fmt/png/hosts/HOST/`),
/// where a name's extension is the view's type.
///
/// The rule (``names(of:format:)``): an entry whose name has the view's extension keeps its name (`photo.jpeg` under
/// `fmt/jpeg/`); one with another image extension has it replaced by the view's (`00001-photo.avif` →
/// `00001-photo.jpg`); any other name gets the view's extension added (`00002-photo` → `00002-photo.jpg`,
/// `00003-v1.2` → `00003-v1.2.jpg`). An entry that keeps its name keeps it; otherwise the first entry in the folder's
/// order to get a name has it, and the others their whole name with the view's extension added (`photo.png.jpg`),
/// else that with `-2`, `-3`… before the extension.
///
/// Guarantees: every entry has exactly one name and no two entries the same, both directions agree, and the same
/// entries in the same order always get the same names; built once per loaded list and format (a list loaded again,
/// edited or not, is named again) and per call for a host's view; never reads a URL or a cache; bounded (the names
/// of at most ``listLimit`` lists and formats are kept).
package final class FormatViewNameIndex: Sendable {
    /// One folder's names under one format view, both ways.
    package struct Names: Sendable {
        /// The entry's name under the view, in the folder's order.
        package let viewNames: [String]
        /// The entry name each name under the view stands for.
        package let entryByViewName: [String: String]
    }

    /// One list's names, and what they were built from.
    private struct Built {
        let count: Int
        let first: String?
        let last: String?
        let storage: ObjectIdentifier
        let names: Names
    }

    private let built = Locked<[String: Built]>([:])
    static let listLimit = 64

    /// The names of the entries of list `list` (as loaded now) under the view of `format`; the same loaded list is
    /// named once per format.
    func names(ofList list: String, _ entries: ImageList.Entries, format: VariantFormat) -> Names {
        let key = format.rawValue + "/" + list
        let storage = ObjectIdentifier(entries.storage)
        if let known = built.withLock({ $0[key] }), known.count == entries.count, known.first == entries.first?.name,
            known.last == entries.last?.name, known.storage == storage
        {
            return known.names
        }
        let names = Self.names(of: entries.map(\.name), format: format)
        let entry = Built(
            count: entries.count, first: entries.first?.name, last: entries.last?.name, storage: storage, names: names)
        built.withLock { built in
            if built.count >= Self.listLimit { built.removeAll() }
            built[key] = entry
        }
        return names
    }

    /// The names `entries` (distinct names, in their folder's order) have under the view of `format`.
    package static func names(of entries: [String], format: VariantFormat) -> Names {
        var viewNames: [String] = []
        viewNames.reserveCapacity(entries.count)
        var entryByViewName: [String: String] = [:]
        entryByViewName.reserveCapacity(entries.count)
        // Entries that keep their names claim them first (`a.jpg` keeps its name after `a.png`), then the others
        // claim the rule's names in order, before any fallback is chosen.
        let preferred = entries.map { preferredName(of: $0, format: format) }
        var claimed: [String: Int] = [:]
        for (index, name) in preferred.enumerated() where name == entries[index] { claimed[name] = index }
        for (index, name) in preferred.enumerated() where claimed[name] == nil { claimed[name] = index }
        for (index, entry) in entries.enumerated() {
            var name = preferred[index]
            if claimed[name] != index {
                let ext = "." + format.fileExtension
                name = entry + ext
                var number = 2
                while claimed[name] != nil || entryByViewName[name] != nil {
                    name = "\(entry)-\(number)\(ext)"
                    number += 1
                }
            }
            viewNames.append(name)
            entryByViewName[name] = entry
        }
        return Names(viewNames: viewNames, entryByViewName: entryByViewName)
    }

    /// `name` with the view's extension: kept when it has it, replacing another image extension, else added.
    package static func preferredName(of name: String, format: VariantFormat) -> String {
        let ext = "." + format.fileExtension
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name + ext }
        switch VariantKind.requestedFormat(inName: Substring(name)) {
        case .format(let named) where named == format: return name
        case .format, .unwritable: return String(name[..<dot]) + ext
        case .unnamed, nil: return name + ext
        }
    }
}
