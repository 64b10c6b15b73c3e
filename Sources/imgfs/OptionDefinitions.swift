import ArgumentParser
import Foundation

/// The long option names of an imgfs subcommand, read from ArgumentParser's own definitions of it (the JSON of
/// `imgfs --experimental-dump-help`), so that nothing else has to list them.
///
/// Guarantees: ``flags`` and ``valued`` hold every long name of the subcommand's options and flags (in option groups
/// too), without `help` and `version`; a flag takes no value, everything in ``valued`` takes one; ``count`` is the
/// number of options and flags its `--help` shows, short-only ones and `--version` included, `--help` not.
struct OptionDefinitions: Sendable {
    let flags: Set<String>
    let valued: Set<String>
    let count: Int

    /// The definitions of `imgfs mount`.
    static let mount = OptionDefinitions(subcommand: "mount")

    /// Reads the definitions of `imgfs NAME` as the parser sees them when it runs (with the root's `--version`).
    init(subcommand name: String) {
        let root = try? JSONDecoder().decode(Dump.self, from: Data(Imgfs._dumpHelp().utf8)).command
        let command = root?.subcommands?.first { $0.commandName == name }
        let named = (command?.arguments ?? []).filter {
            $0.kind != "positional" && !($0.names ?? []).contains { $0.name == "help" }
        }
        func longNames(_ kind: String) -> Set<String> {
            let names = named.filter { $0.kind == kind }.flatMap { ($0.names ?? []).filter { $0.kind == "long" } }
            return Set(names.map(\.name)).subtracting(["version"])
        }
        flags = longNames("flag")
        valued = longNames("option")
        count = named.count
    }

    private struct Dump: Decodable {
        struct Command: Decodable {
            let commandName: String
            let arguments: [Argument]?
            let subcommands: [Command]?
        }
        struct Argument: Decodable {
            struct Name: Decodable {
                let kind: String
                let name: String
            }
            let kind: String
            let names: [Name]?
        }
        let command: Command
    }
}
