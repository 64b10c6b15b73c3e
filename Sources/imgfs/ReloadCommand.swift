import ArgumentParser
import Foundation
import Glibc

/// `imgfs reload MOUNTPOINT`: asks a running mount to reread its policy file (sends its daemon SIGHUP).
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Reread a mount's policy file (as SIGHUP does); an invalid file keeps the old rules (see the log).")

    @Argument(help: "The mount point.")
    var mountPoint: String

    func run() throws {
        let statistics = try JSONSerialization.jsonObject(with: try StatisticsFile.read(mountPoint)) as? [String: Any]
        guard let pid = statistics?["pid"] as? Int, pid > 0 else {
            throw ValidationError("\(mountPoint): no daemon pid")
        }
        guard kill(pid_t(pid), SIGHUP) == 0 else {
            let reason = String(cString: strerror(errno))
            throw ValidationError("\(mountPoint): cannot signal the daemon (pid \(pid)): \(reason)")
        }
        print("imgfs: asked \(mountPoint) (pid \(pid)) to reread its policy file")
    }
}
