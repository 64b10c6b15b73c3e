import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// `imgfs list add MOUNT NAME FILE|-`: stores a list; entries get readable names (``EntryNamer``). Unless
/// `--no-probe` (or `--warm`, which loads them whole), every entry is then probed through the list's folder, held
/// open meanwhile: a `stat` of `lists/NAME/<entry>`, which costs an uncached image one request for its first 64 KiB,
/// not a download. An entry whose URL names no image extension gets one from what the mount has cached of it (asked
/// without a fetch), else from its probe (its `user.imgfs.content_type`); the list is then written again with those
/// names.
///
/// Invalid lines are reported with their line numbers and skipped; adding again under the same name replaces the list
/// and keeps the names of the URLs that stay.
struct ListAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add (or replace) a list from a text, CSV, TSV or JSON Lines file (gzip-compressed or not).",
        discussion: """
            Text: one URL a line, optionally URL<TAB>file name; # starts a comment. CSV and TSV: a header row, the \
            URLs in the column named by --url-column (default url) and entry names in --name-column (default name, \
            if there is one); quoted fields, a byte-order mark and CRLF are understood. JSON Lines: one object a line \
            with the same keys. The format follows the file's name (.csv, .tsv, .jsonl, .ndjson, each also with .gz), \
            else --format, else the first line. Rows without a valid URL are reported by line number and skipped.
            """
    )

    @Argument(help: "The mount point of a running imgfs mount.") var mountPoint: String
    @Argument(help: "The list's name (no '/', no leading '.', at most 200 bytes).") var name: String
    @Argument(help: "The file that lists the URLs; - for standard input.") var file: String

    @Option(help: "text, csv, tsv or jsonl (default: from the file's name, else from its first line).")
    var format: String?

    @Option(help: "The column (CSV, TSV) or key (JSON Lines) that holds the URLs.")
    var urlColumn = "url"

    @Option(help: "The column or key that holds entry names (default: name, when there is one).")
    var nameColumn: String?

    @Flag(
        help: """
            Do not probe the entries (a request for the first 64 KiB of each uncached image); names of URLs \
            without an image extension then have one only when the type is cached.
            """)
    var noProbe = false

    @Option(help: "How many entries to probe at once.")
    var concurrency = 16

    @Flag(
        help: """
            Warm the list: the mount loads every entry in the background, after what readers wait for, now and the \
            first time the list is opened after each mount (for data loaders; up to half of the cache). Entries are \
            then not probed first (only those whose names wait for a type).
            """)
    var warm = false

    func run() throws {
        do { try ListStore.validate(name) } catch { throw ListCommand.usageError(error.description, command: "add") }
        let store = try ListCommand.store(of: mountPoint, command: "add")
        let mount = URL(fileURLWithPath: mountPoint).standardizedFileURL.path
        // Pass one: every row checked and spooled; nothing of a row stays in memory.
        var chosen: ListFormat?
        if let format {
            guard let named = ListFormat(rawValue: format.lowercased()) else {
                throw ListCommand.usageError("--format: text, csv, tsv or jsonl, not \(format)", command: "add")
            }
            chosen = named
        }
        let spool: ListSpool
        var problems = 0
        // Rows whose URL names no image type.
        var unnamed = 0
        do {
            spool = try ListSpool(directory: store.directory)
            let rows = ListRows(source: file, format: chosen, columns: .init(url: urlColumn, name: nameColumn))
            var suffix: [UInt8] = []
            try rows.scan(
                { scanned in
                    // A line that is plainly a URL is named on its bytes; any other row through its ImageURL.
                    if case .plain(let bytes) = scanned {
                        suffix.removeAll(keepingCapacity: true)
                        if EntryNamer.appendSuffix(ofPlainURL: bytes, to: &suffix) {
                            let needsType = PlainListLine.pathExtension(of: bytes) == nil
                            if needsType { unnamed += 1 }
                            try suffix.withUnsafeBytes {
                                try spool.append(url: bytes, suffix: $0, given: nil, needsType: needsType)
                            }
                            return
                        }
                    }
                    let line: ListText.Line
                    switch scanned {
                    case .parsed(let parsed): line = parsed
                    case .plain(let bytes):
                        line = ListText.Line(url: try ImageURL(String(decoding: bytes, as: UTF8.self)), givenName: nil)
                    }
                    let needsType = ImageExtension.fromPath(of: line.url) == nil
                    if needsType { unnamed += 1 }
                    try spool.append(
                        .init(
                            urlText: line.url.string, suffix: EntryNamer.suffix(url: line.url, given: line.givenName),
                            given: line.givenName, needsType: needsType))
                },
                problem: { problem in
                    problems += 1
                    FileHandle.standardError.write(Data("imgfs list add: \(problem)\n".utf8))
                })
        } catch let error as ListRows.Unreadable {
            throw ListCommand.usageError(error.description, command: "add")
        } catch let error as ListSpool.Failure {
            throw ListWriteError(name: name, reason: error.reason)
        }
        let probe = ListProbe(mountPoint: mount, concurrency: max(1, min(concurrency, 256)))
        var types: [String: String] = [:]
        do {
            if unnamed > 0 { types = try knownTypes(in: spool, probe: probe) }
        } catch let error as ListSpool.Failure {
            throw ListWriteError(name: name, reason: error.reason)
        }
        // The URLs whose type only a probe can tell (their names then get an extension): no image type in the URL,
        // none cached.
        let typesWanted = !noProbe && unnamed > 0
        let known = types
        // Pass two: the names, written as they are made.
        let previous = store.list(name, recheck: true)
        try write(spool, to: store, types: types, previous: previous, samePositions: false)
        // A warmed list loads every image whole at once (and learns their facts as it does): a probe first would only
        // cost each a second request, so then only the entries whose names wait for a type are probed.
        if !noProbe && (!warm || typesWanted) {
            // The folder stays open while its entries are stat'ed: the mount then probes each uncached image (its
            // first 64 KiB) rather than download it. Opening it also makes the mount read the new list at once.
            let folder = "\(mount)/lists/\(name)"
            let listing = opendir(folder)
            defer { if let listing { closedir(listing) } }
            // Read anew (a store's loaded list is told apart from a newer one by its file's modification time).
            if let list = ListStore(directory: store.directory).list(name) {
                let wantsType: @Sendable (ImageList.Entry) -> Bool = { entry in
                    typesWanted && known[entry.urlText] == nil && Self.namesNoType(entry.urlText)
                }
                let selected = warm ? list.entries.indices.filter { wantsType(list.entries[$0]) } : nil
                let found = probe.probe(count: selected?.count ?? list.entries.count) { position in
                    let entry = list.entries[selected?[position] ?? position]
                    return ("\(folder)/\(entry.name)", wantsType(entry) ? entry.urlText : nil)
                }
                if !found.isEmpty {
                    types.merge(found) { known, _ in known }
                    // Pass three: the list again, its untyped entries named with the types found; the list just
                    // written holds every row at its spool position, and its facts stay with them.
                    try write(spool, to: store, types: types, previous: previous, samePositions: true)
                }
            }
        }
        do { try ListWarmMark.set(warm, list: name, in: store) } catch {
            throw ListCommand.usageError("cannot mark the list for warming: \(error)", command: "add")
        }
        // Opening the list's folder makes the mount read the new list now (a lookup may be answered by the kernel's
        // cache of the name, an open always reaches the mount).
        if let folder = opendir("\(mount)/lists/\(name)") { closedir(folder) }
        let count = spool.count
        let skipped = problems == 0 ? "" : ", \(problems) invalid lines skipped"
        let warming = warm ? ", warming in the background" : ""
        print("list \(name): \(count) entries\(skipped)\(warming)")
        if problems > 0 { throw ExitCode.failure }
    }

    /// What the mount has cached of the URLs of `spool` that name no image type: their extensions by URL text,
    /// asked a batch at a time (memory stays flat whatever the count; only the types found are kept).
    private func knownTypes(in spool: ListSpool, probe: ListProbe) throws -> [String: String] {
        var types: [String: String] = [:]
        var batch: [ImageURL] = []
        func ask() {
            for (url, type) in probe.knownExtensions(for: batch) { types[url.string] = type }
            batch.removeAll(keepingCapacity: true)
        }
        try spool.forEachStored { row in
            guard row.needsType, let url = try? ImageURL(row.urlText) else { return }
            batch.append(url)
            if batch.count >= 4096 { ask() }
        }
        ask()
        return types
    }

    /// Whether the URL `urlText` names no image type (``ImageExtension/fromPath(of:)``).
    private static func namesNoType(_ urlText: String) -> Bool {
        var text = urlText
        return text.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            if PlainListLine.isPlainURL(bytes) { return PlainListLine.pathExtension(of: bytes) == nil }
            return (try? ImageURL(urlText)).map { ImageExtension.fromPath(of: $0) == nil } ?? false
        }
    }

    /// Writes the list from `spool`: a URL of `previous` (the list replaced) keeps its name there; a URL that names
    /// no image type gets `types[urlText]` when known. `samePositions`: the list replaced holds the spool's rows at
    /// the same positions (their facts follow them); otherwise facts follow the URLs kept from `previous`.
    private func write(
        _ spool: ListSpool, to store: ListStore, types: [String: String], previous: ImageList?, samePositions: Bool
    ) throws {
        let count = spool.count
        var previous = previous.map(PreviousNames.init)
        var taken: Set<String>? = previous == nil ? nil : Set(minimumCapacity: count)
        try store.write(name) { writer in
            var index = 0
            try spool.forEachStored { stored in
                defer { index += 1 }
                // A fresh name needs no String: its index and suffix; a kept name or a type found take the long way.
                if previous == nil, !stored.needsType || types.isEmpty {
                    try writer.append(
                        index: index, count: count, suffix: stored.suffix, urlText: stored.url,
                        previous: samePositions ? index : nil)
                    return
                }
                let row = stored.row
                let kept = previous?.take(row.urlText)
                var entryName: String
                if let kept {
                    entryName = kept.name
                } else if row.needsType, let type = types[row.urlText], let url = try? ImageURL(row.urlText) {
                    entryName = EntryNamer.name(
                        index: index, count: count, url: url, given: row.given, knownExtension: type)
                } else {
                    entryName = EntryNamer.name(index: index, count: count, suffix: row.suffix)
                }
                // Fresh names differ by their index; only names kept from the old list can meet another.
                if taken != nil {
                    if taken!.contains(entryName) { entryName = ListNaming.unique(entryName, taken: taken!) }
                    taken!.insert(entryName)
                }
                try writer.append(
                    name: entryName, urlText: row.urlText, previous: samePositions ? index : kept?.position)
            }
        }
    }
}

/// Turns parsed lines into a named list.
enum ListNaming {
    /// Names each line; a URL that was in `previous` keeps its name there (its first one, for duplicates), and a name
    /// already taken gets `-2`, `-3`, ... before its extension.
    static func list(
        _ name: String, lines: [ListText.Line], extensions: [ImageURL: String],
        previous: ImageList?
    ) -> ImageList {
        var kept: [String: [String]] = [:]
        for entry in previous?.entries ?? [] { kept[entry.urlText, default: []].append(entry.name) }
        var taken = Set<String>()
        var entries: [ImageList.Entry] = []
        for (index, line) in lines.enumerated() {
            var entryName =
                kept[line.url.string]?.first.map { first in
                    kept[line.url.string]?.removeFirst()
                    return first
                }
                ?? EntryNamer.name(
                    index: index, count: lines.count, url: line.url, given: line.givenName,
                    knownExtension: extensions[line.url])
            if taken.contains(entryName) { entryName = unique(entryName, taken: taken) }
            taken.insert(entryName)
            entries.append(ImageList.Entry(name: entryName, url: line.url))
        }
        return ImageList(name: name, entries: entries)
    }

    static func unique(_ name: String, taken: Set<String>) -> String {
        let dot = name.lastIndex(of: ".")
        let stem = dot.map { String(name[..<$0]) } ?? name
        let tail = dot.map { String(name[$0...]) } ?? ""
        var counter = 2
        while taken.contains("\(stem)-\(counter)\(tail)") { counter += 1 }
        return "\(stem)-\(counter)\(tail)"
    }
}
