import ArgumentParser
import Foundation

/// `imgfs stats [MOUNTPOINT]`: prints the mount's `.imgfs/stats.json`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Print cache and transfer statistics of a mount (its .imgfs/stats.json).")

    @OptionGroup var target: MountArgument

    func run() throws {
        let mountPoint = try target.resolved()
        FileHandle.standardOutput.write(try StatisticsFile.read(mountPoint))
    }
}
