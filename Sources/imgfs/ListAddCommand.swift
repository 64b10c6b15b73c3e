import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// `imgfs list add MOUNT NAME FILE|-`: stores a list; entries get readable names (``EntryNamer``). An entry whose URL
/// names no image extension gets one from what the mount has cached of it (asked without a fetch), or else from a
/// probe (a `stat` through the mount, which waits for the response headers, then its `user.imgfs.content_type`)
/// unless `--no-probe`.
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

    @Flag(help: "Do not probe URLs without an image extension (names then have one only when the type is cached).")
    var noProbe = false

    @Option(help: "How many URLs to probe at once.")
    var concurrency = 16

    @Flag(
        help: """
            Warm the list: the mount loads every entry in the background, after what readers wait for, now and the \
            first time the list is opened after each mount (for data loaders; up to half of the cache).
            """)
    var warm = false

    func run() throws {
        do { try ListStore.validate(name) } catch { throw ListCommand.usageError(error.description, command: "add") }
        let store = try ListCommand.store(of: mountPoint, command: "add")
        let mount = URL(fileURLWithPath: mountPoint).standardizedFileURL.path
        // Pass one: every row checked and spooled; only URLs without an image extension stay in memory.
        var chosen: ListFormat?
        if let format {
            guard let named = ListFormat(rawValue: format.lowercased()) else {
                throw ListCommand.usageError("--format: text, csv, tsv or jsonl, not \(format)", command: "add")
            }
            chosen = named
        }
        let spool: ListSpool
        var problems = 0
        var unnamed = Set<ImageURL>()
        do {
            spool = try ListSpool(directory: store.directory)
            let rows = ListRows(source: file, format: chosen, columns: .init(url: urlColumn, name: nameColumn))
            try rows.read(
                { line in
                    let needsType = ImageExtension.fromPath(of: line.url) == nil
                    if needsType { unnamed.insert(line.url) }
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
        var extensions = probe.knownExtensions(for: Array(unnamed))
        if !noProbe {
            extensions.merge(probe.extensions(for: unnamed.filter { extensions[$0] == nil })) { known, _ in known }
        }
        let types = Dictionary(extensions.map { ($0.key.string, $0.value) }, uniquingKeysWith: { first, _ in first })
        unnamed = []
        // Pass two: the names, written as they are made.
        let count = spool.count
        var previous = store.list(name, recheck: true).map(PreviousNames.init)
        var taken: Set<String>? = previous == nil ? nil : []
        try store.write(name) { writer in
            var index = 0
            try spool.forEach { row in
                defer { index += 1 }
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
                try writer.append(name: entryName, urlText: row.urlText, previous: kept?.position)
            }
        }
        do { try ListWarmMark.set(warm, list: name, in: store) } catch {
            throw ListCommand.usageError("cannot mark the list for warming: \(error)", command: "add")
        }
        // Looking the list's folder up makes the mount read the new list now rather than at the first `ls`.
        _ = FileManager.default.fileExists(atPath: "\(mount)/lists/\(name)")
        let skipped = problems == 0 ? "" : ", \(problems) invalid lines skipped"
        let warming = warm ? ", warming in the background" : ""
        print("list \(name): \(count) entries\(skipped)\(warming)")
        if problems > 0 { throw ExitCode.failure }
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
