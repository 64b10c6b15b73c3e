import Foundation
import Glibc
import ImgfsFilesystem
import ImgfsModel
import Logging

/// What the daemon does on SIGHUP (which `imgfs reload` sends): rereads the policy file when the mount has one,
/// reopens its log file when it writes to one (so that logrotate can move it away), and otherwise logs that there is
/// nothing to reload. It never unmounts.
///
/// Guarantees: it runs on the signal thread (``SignalThread``), never on a FUSE or curl thread; each SIGHUP's outcome
/// is logged and recorded in `status` (stats.json's `reload`) once it has been carried out.
struct HangUpHandler: Sendable {
    let policy: PolicyReloader?
    /// The log file the daemon's standard output and error go to; nil: the daemon logs to a terminal or pipe (`-f`).
    let logFile: String?
    let status: ReloadStatus
    let logger: Logger

    init(policy: PolicyReloader?, logFile: String?, logger: Logger) {
        self.policy = policy
        self.logFile = logFile
        self.logger = logger
        status = ReloadStatus(policyFile: policy?.path, logFile: logFile)
    }

    /// Reopens the log file, rereads the policy file, and records what happened.
    func reload() {
        var outcome: [String] = []
        var succeeded = true
        if let logFile {
            if let problem = Self.reopen(logFile) {
                logger.error("SIGHUP: cannot reopen the log file \(logFile): \(problem)")
                outcome.append("could not reopen the log file \(logFile): \(problem)")
                succeeded = false
            } else {
                logger.notice("SIGHUP: reopened the log file \(logFile)")
                outcome.append("reopened the log file \(logFile)")
            }
        }
        if let policy {
            let result = policy.reload()
            outcome.append(result.line)
            succeeded = succeeded && result.succeeded
        } else if !outcome.isEmpty {
            outcome.append("no --policy-file to reread")
        }
        if outcome.isEmpty {
            logger.notice("SIGHUP: nothing to reload (no --policy-file, and the log goes to standard error)")
            outcome.append("nothing to reload: no --policy-file, and the daemon logs to its standard error (-f)")
            succeeded = false
        }
        status.record(outcome, succeeded: succeeded)
    }

    /// Points standard output and error at `path` again (``LogFile/open(_:)``: appending, 0600, never through a
    /// symbolic link); nil, or the reason it could not.
    private static func reopen(_ path: String) -> String? {
        let descriptor: Int32
        do { descriptor = try LogFile.open(path) } catch { return error.reason }
        defer { close(descriptor) }
        fflush(nil)
        guard dup2(descriptor, STDOUT_FILENO) >= 0, dup2(descriptor, STDERR_FILENO) >= 0 else {
            return String(cString: strerror(errno))
        }
        return nil
    }
}
