import ArgumentParser
import Foundation
import Glibc

/// `imgfs reload [MOUNTPOINT]`: sends a running mount's daemon SIGHUP, waits until it has been handled, and says what
/// the daemon did (see ``HangUpHandler``).
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Reread a mount's policy file and reopen its log file, as SIGHUP does; never unmounts.",
        discussion: """
            Prints what the daemon did: reread the --policy-file (an invalid file keeps the old rules), reopened its \
            log file (for logrotate). Exit status 0 when it reloaded something and all of it worked; 1 when the \
            mount has nothing to reload (no --policy-file, and it logs to stderr with -f) or the policy file is \
            invalid.
            """)

    @OptionGroup var target: MountArgument

    func run() throws {
        let mountPoint = try target.resolved()
        let before = try Self.status(of: mountPoint)
        guard let pid = before["pid"] as? Int, pid > 0, let reload = before["reload"] as? [String: Any] else {
            throw ValidationError("\(mountPoint): no daemon pid or reload state in its .imgfs/stats.json")
        }
        guard reload["policy_file"] != nil || reload["log_file"] != nil else {
            print(
                "imgfs: \(mountPoint) (pid \(pid)) has nothing to reload: it has no --policy-file and logs to its "
                    + "standard error (-f)")
            throw ExitCode.failure
        }
        let count = reload["reloads"] as? Int ?? 0
        guard kill(pid_t(pid), SIGHUP) == 0 else {
            let reason = String(cString: strerror(errno))
            throw ValidationError("\(mountPoint): cannot signal the daemon (pid \(pid)): \(reason)")
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let after = (try? Self.status(of: mountPoint))?["reload"] as? [String: Any],
                after["reloads"] as? Int ?? 0 > count
            {
                for line in after["outcome"] as? [String] ?? [] { print("imgfs: \(mountPoint) (pid \(pid)): \(line)") }
                if after["succeeded"] as? Bool != true { throw ExitCode.failure }
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ValidationError("\(mountPoint): sent SIGHUP to pid \(pid), but it did not report a reload within 10 s")
    }

    private static func status(of mountPoint: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: try StatisticsFile.read(mountPoint)) as? [String: Any] ?? [:]
    }
}
