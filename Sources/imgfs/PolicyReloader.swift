import Foundation
import Glibc
import ImgfsCore
import Logging

/// Rereads the policy file on SIGHUP (what `imgfs reload MOUNTPOINT` sends), when the mount has one.
///
/// Guarantees: a valid file replaces the rules at once (transfers started later use them); an invalid one keeps the
/// old rules and logs the file, line and reason. SIGHUP is blocked in every thread and taken by one thread with
/// sigwait, so it neither interrupts a FUSE or curl thread nor reaches libfuse's handler (which would unmount).
struct PolicyReloader: Sendable {
    let path: String
    let defaults: HostRule
    let logger: Logger

    /// Blocks SIGHUP in the calling thread and the threads it starts later; call before any thread is started.
    static func blockSignal() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Blocks SIGHUP again (mounting unblocks it) and starts the thread that waits for it.
    func start() {
        Self.blockSignal()
        let thread = Thread { [self] in
            var waiting = sigset_t()
            sigemptyset(&waiting)
            sigaddset(&waiting, SIGHUP)
            var received: Int32 = 0
            while sigwait(&waiting, &received) == 0 { reload() }
        }
        thread.name = "imgfs-sighup"
        thread.start()
    }

    /// Reads the file again; keeps the old rules when it is invalid.
    func reload() {
        do {
            let rules = try PolicyFile.load(path, defaults: defaults)
            ActivePolicy.replace(with: rules)
            logger.notice(
                "policy reloaded: \(rules.rules.count) rules from \(path)",
                metadata: ["patterns": "\(rules.rules.map(\.pattern))"])
        } catch {
            logger.error("policy not reloaded, keeping the old rules: \(error)")
        }
    }
}
