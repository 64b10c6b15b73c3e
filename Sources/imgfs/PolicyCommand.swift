import ArgumentParser
import ImgfsModel

/// `imgfs policy check FILE`: validates a policy file without mounting.
struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy", abstract: "Work with policy files.", subcommands: [Check.self])

    /// `imgfs policy check FILE`.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate a policy file: prints its rules, or the file, line and reason it is invalid.")

        @Argument(help: "The policy file (YAML).")
        var file: String

        func run() throws {
            let rules = try PolicyFile.load(file, defaults: HostRule(pattern: "*"))
            print("\(file): valid, \(rules.rules.count) rule\(rules.rules.count == 1 ? "" : "s")")
            for rule in rules.rules {
                let dropped = rule.dropQuery.isEmpty ? "" : ", cache key drops \(rule.dropQuery.joined(separator: " "))"
                let denied = rule.deny == true ? ", denied" : ""
                print("  \(rule.pattern): \(rule.headers.count) headers\(denied)\(dropped)")
            }
        }
    }
}
