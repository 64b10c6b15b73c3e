import ImgfsModel
import Logging

/// Rereads the mount's `--policy-file` (one part of what SIGHUP does, see ``HangUpHandler``).
///
/// Guarantees: a valid file replaces the mount's rules at once (requests and names made later use them, those made
/// before keep theirs); an invalid one keeps the old rules and logs the file, line and reason.
struct PolicyReloader: Sendable {
    let path: String
    let defaults: HostRule
    /// The mount's rules, replaced on a successful reload.
    let rules: RequestRulesHolder
    let logger: Logger

    /// Reads the file again; keeps the old rules when it is invalid. Returns one line saying what happened, and
    /// whether the new rules are in force.
    func reload() -> (line: String, succeeded: Bool) {
        do {
            let loaded = try PolicyFile.load(path, defaults: defaults)
            rules.replace(with: loaded)
            logger.notice(
                "policy reloaded: \(loaded.rules.count) rules from \(path)",
                metadata: ["patterns": "\(loaded.rules.map(\.pattern))"])
            return ("reread the policy file \(path): \(loaded.rules.count) rules", true)
        } catch {
            logger.error("policy not reloaded, keeping the old rules: \(error)")
            return ("kept the old rules: the policy file is invalid: \(error)", false)
        }
    }
}
