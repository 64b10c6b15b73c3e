import ArgumentParser
import Foundation

/// `imgfs stats [MOUNTPOINT] [--json]`: prints a short summary of a mount's counters (``StatisticsSummary``), or its
/// whole `.imgfs/stats.json`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Print a summary of a mount's cache and transfer counters; --json prints all of them.",
        discussion: """
            The summary gives hits and misses per tier, images and bytes held, transfers, failures by kind, lists, \
            hosts, thumbnails and the shared tier. --json prints the mount's .imgfs/stats.json as it is.
            """)

    @OptionGroup var target: MountArgument

    @Flag(help: "Print every counter as JSON (the mount's .imgfs/stats.json).")
    var json = false

    func run() throws {
        let mountPoint = try target.resolved()
        let data = try StatisticsFile.read(mountPoint)
        if json {
            FileHandle.standardOutput.write(data)
            return
        }
        let document = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        print(StatisticsSummary(document: document, mountPoint: mountPoint).text, terminator: "")
    }
}
