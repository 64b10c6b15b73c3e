import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsSystem
import Logging

/// `imgfs mount MOUNTPOINT`: wiring only; what each part guarantees is documented on its type, and each step of
/// ``run()`` is a helper in `MountCommand+Steps.swift`.
struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mount", abstract: "Mount imgfs on MOUNTPOINT.")

    @Argument(help: "An existing, empty directory to mount on (or any, with -o nonempty).")
    var mountPoint: String

    @OptionGroup(title: "Mount and log")
    var process: ProcessOptions

    @OptionGroup(title: "Cache")
    var cache: CacheOptions

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @OptionGroup(title: "Requests")
    var requests: RequestOptions

    @OptionGroup(title: "Lists and variants")
    var thumbnails: ThumbnailOptions

    @OptionGroup(title: "Shared tier (a fleet of mounts)")
    var shared: SharedCacheOptions

    @OptionGroup(title: "Advanced")
    var advanced: AdvancedOptions

    func run() throws {
        let mountPath = try MountPoint.validated(mountPoint, allowNonEmpty: process.allowsNonEmpty)
        let cacheDirectory = try cache.preparedDirectory()
        // An invalid policy file fails the mount here, on the terminal, with its file, line and reason.
        let hostRules = try requests.hostRules()
        guard process.foreground else {
            return try Background.start(mountPoint: mountPath, logFile: process.logFile(in: cacheDirectory))
        }
        let logger = Self.startDaemonProcess(process)
        let (rules, hangUp) = applyRequestRules(hostRules, cacheDirectory: cacheDirectory, logger: logger)
        let tuning = try advanced.tuning()
        let fetcher = makeFetcher(tuning: tuning, logger: logger)
        let parts = try makeFilesystem(
            fetcher: fetcher, rules: rules, cacheDirectory: cacheDirectory, tuning: tuning, reloadStatus: hangUp.status,
            logger: logger)
        if tuning.desktopThumbnails {
            parts.filesystem.feedDesktopCache(
                DesktopCacheFeeder(
                    mountPoint: mountPath, cache: .userCache(), variants: parts.variants, logger: logger))
        }
        let purge = ManualPressure()
        let pressure = Self.watchMemoryPressure(parts, manual: purge, logger: logger)
        let mount: FuseMount
        do {
            mount = try mountFilesystem(parts, at: mountPath, tuning: tuning, logger: logger)
        } catch {
            pressure.stop()
            fetcher.shutdown()
            throw error
        }
        try Self.answerSignals(hangUp: hangUp, purge: purge, mount: mount, logger: logger)
        announce(mountPath, cacheDirectory: cacheDirectory, parts: parts, logger: logger)
        mount.serve {
            parts.warmer?.stop()
            pressure.stop()
            fetcher.shutdown()
            parts.repository.flushDiskWrites()
            parts.variants.flushDiskWrites()
        }
        logger.notice("unmounted \(mountPath)")
    }
}
