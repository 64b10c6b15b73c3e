import ArgumentParser
import Foundation
import Glibc

/// `imgfs purge MOUNTPOINT`: empties the memory cache of a running mount, as memory pressure would (SIGUSR1 to its
/// daemon, whose pid is in `.imgfs/stats.json`).
struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Empty the memory cache of a mount (the same as sending its daemon SIGUSR1).")

    @Argument(help: "The mount point.")
    var mountPoint: String

    func run() throws {
        guard let document = try JSONSerialization.jsonObject(with: StatisticsFile.read(mountPoint)) as? [String: Any],
              let pid = document["pid"] as? Int
        else { throw ValidationError("\(mountPoint)/.imgfs/stats.json has no pid") }
        guard kill(pid_t(pid), SIGUSR1) == 0 else {
            throw ValidationError("cannot signal the imgfs daemon (pid \(pid)): \(String(cString: strerror(errno)))")
        }
        print("imgfs: asked the daemon (pid \(pid)) to purge its memory cache")
    }
}
