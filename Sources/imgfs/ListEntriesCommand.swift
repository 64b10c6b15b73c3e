import ArgumentParser
import Foundation
import ImgfsFilesystem
import ImgfsModel

/// `imgfs list show [MOUNT] NAME [--json]`: what a list knows of each entry, in list order, read from its files
/// without touching the mount's images: a table on a terminal, or with `--json` the lines of `.index.jsonl`.
struct ListEntriesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a list's entries with their size, format, dimensions, orientation and status.",
        discussion: """
            Nothing is fetched: what is shown was learnt when an entry was looked up, listed with ls -l or opened \
            (status unknown: not yet). --json prints one JSON object a line, the same as <mount>/lists/NAME/\
            .index.jsonl: name, url, size, format, width, height, orientation, status (ok, failed, unknown), reason.
            """
    )

    @Argument(help: "[MOUNT] NAME: the mount point (default: your one imgfs mount) and the list's name.")
    var arguments: [String]

    @Option(help: "The mount point, as an option.")
    var mount: String?

    @Flag(help: "One JSON object a line instead of a table.")
    var json = false

    func validate() throws {
        guard (1...2).contains(arguments.count) else { throw ValidationError("give the list's name (and the mount)") }
    }

    func run() throws {
        let name = arguments.last!
        let mountPoint = try MountSelection.resolve(argument: arguments.count == 2 ? arguments[0] : nil, option: mount)
        let store = try ListCommand.store(of: mountPoint, command: "show")
        guard let (list, facts) = store.listWithFacts(name, recheck: true) else {
            throw ListCommand.usageError("no list called \(name)", command: "show")
        }
        let output = FileHandle.standardOutput
        var buffer = ""
        func flush() {
            output.write(Data(buffer.utf8))
            buffer = ""
        }
        if !json { buffer += "NAME\tSIZE\tFORMAT\tWIDTH\tHEIGHT\tORIENTATION\tSTATUS\n" }
        for (index, entry) in list.entries.enumerated() {
            let known = facts?.facts(at: index, urlText: entry.urlText)
            if json {
                buffer += ListIndex.line(entry, facts: known)
            } else {
                func text(_ value: Int?) -> String { value.map(String.init) ?? "-" }
                let status = known.map { $0.status == .failed ? "failed: \($0.reason ?? "")" : "ok" } ?? "unknown"
                buffer +=
                    [
                        entry.name, text(known?.size), known?.format?.rawValue ?? "-", text(known?.width),
                        text(known?.height), text(known?.orientation), status
                    ].joined(separator: "\t") + "\n"
            }
            if buffer.utf8.count > 1 << 16 { flush() }
        }
        flush()
    }
}
