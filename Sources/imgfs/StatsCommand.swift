import ArgumentParser
import Foundation

/// `imgfs stats MOUNTPOINT`: prints the mount's `.imgfs/stats.json`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Print cache and transfer statistics of a mount (its .imgfs/stats.json).")

    @Argument(help: "The mount point.")
    var mountPoint: String

    func run() throws {
        FileHandle.standardOutput.write(try StatisticsFile.read(mountPoint))
    }
}
