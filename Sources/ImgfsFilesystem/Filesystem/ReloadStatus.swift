import ImgfsModel

/// What the daemon can reload on SIGHUP (`imgfs reload`), and what the last reload did: published in
/// `.imgfs/stats.json` (`reload`) so that `imgfs reload` can say what happened.
///
/// Guarantees: `reloads` grows by one per reload, only after that reload's `outcome` and `succeeded` are in place, so a
/// reader that sees the count change reads that reload's result.
public final class ReloadStatus: Sendable {
    /// What stats.json shows.
    public struct Snapshot: Sendable, Codable, Equatable {
        /// The `--policy-file` reread on SIGHUP; nil: none.
        public var policyFile: String?
        /// The log file reopened on SIGHUP (for logrotate); nil: the daemon logs to its standard error (`-f`).
        public var logFile: String?
        /// Reloads since the mount started.
        public var reloads = 0
        /// What the last reload did, one line per action (`reread the policy file …: 3 rules`).
        public var outcome: [String] = []
        /// Whether the last reload reloaded something and every part of it worked.
        public var succeeded = true
    }

    private let state: Locked<Snapshot>

    /// A status that has seen no reload, for the given policy file and log file.
    public init(policyFile: String?, logFile: String?) {
        state = Locked(Snapshot(policyFile: policyFile, logFile: logFile))
    }

    /// Records the result of one reload.
    public func record(_ outcome: [String], succeeded: Bool) {
        state.withLock {
            $0.outcome = outcome
            $0.succeeded = succeeded
            $0.reloads += 1
        }
    }

    /// The state now.
    public func snapshot() -> Snapshot { state.withLock { $0 } }
}
