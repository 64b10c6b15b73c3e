import ArgumentParser
import Foundation
import ImgfsFuse

/// `imgfs purge [MOUNTPOINT] [--memory|--disk|--expired]`: empties a running mount's caches (the daemon does it when
/// `user.imgfs.purge` is set on the mount's `.imgfs/` directory).
struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract:
            "Empty a mount's memory cache (the default, as memory pressure or SIGUSR1 would), both caches, or the "
            + "expired images."
    )

    enum Kind: String, EnumerableFlag {
        case memory, disk, expired

        static func help(for value: Kind) -> ArgumentHelp? {
            switch value {
            case .memory: "The memory cache (default)."
            case .disk: "The disk cache and the memory cache."
            case .expired: "Expired images, from both caches."
            }
        }
    }

    @OptionGroup var target: MountArgument

    @Flag(exclusivity: .exclusive)
    var kind: Kind = .memory

    func run() throws {
        let mountPoint = try target.resolved()
        try StatisticsFile.requireMount(mountPoint)
        // Only the mount's owner and root may purge (others: Permission denied).
        try MountControl.set("user.imgfs.purge", to: kind.rawValue, on: "\(mountPoint)/.imgfs")
        print(
            "imgfs: purged the "
                + "\(kind == .expired ? "expired images" : kind == .disk ? "disk and memory caches" : "memory cache") "
                + "of \(mountPoint)"
        )
    }
}
