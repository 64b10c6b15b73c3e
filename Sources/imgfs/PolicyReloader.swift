import ImgfsModel
import Logging

/// Rereads the mount's `--policy-file` (one part of what SIGHUP does, see ``HangUpHandler``).
///
/// Guarantees: a valid file replaces the rules at once (transfers started later use them); an invalid one keeps the
/// old rules and logs the file, line and reason.
struct PolicyReloader: Sendable {
    let path: String
    let defaults: HostRule
    let logger: Logger

    /// Reads the file again; keeps the old rules when it is invalid. Returns one line saying what happened, and
    /// whether the new rules are in force.
    func reload() -> (line: String, succeeded: Bool) {
        do {
            let rules = try PolicyFile.load(path, defaults: defaults)
            ActivePolicy.replace(with: rules)
            logger.notice(
                "policy reloaded: \(rules.rules.count) rules from \(path)",
                metadata: ["patterns": "\(rules.rules.map(\.pattern))"])
            return ("reread the policy file \(path): \(rules.rules.count) rules", true)
        } catch {
            logger.error("policy not reloaded, keeping the old rules: \(error)")
            return ("kept the old rules: the policy file is invalid: \(error)", false)
        }
    }
}
