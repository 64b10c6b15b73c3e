import ArgumentParser
import Foundation
import ImgfsCore
import ImgfsCurl
import ImgfsFuse
import ImgfsSystem
import Logging

/// `imgfs mount MOUNTPOINT`: wiring only; what each part guarantees is documented on its type.
struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mount", abstract: "Mount imgfs on MOUNTPOINT.")

    @Argument(help: "An existing, empty directory to mount on.")
    var mountPoint: String

    @Option(help: "Where imgfs keeps its cache and files (default: $XDG_CACHE_HOME/imgfs, else ~/.cache/imgfs).")
    var cacheDir: String?

    @Flag(name: [.short, .customLong("foreground")], help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Flag(help: "Mount even on a directory that is not empty (its files are hidden while mounted).")
    var nonempty = false

    @Option(name: .short, help: ArgumentHelp("FUSE mount options, comma separated (e.g. allow_other).", valueName: "options"))
    var options: [String] = []

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @OptionGroup(title: "Caching")
    var cache: CacheOptions

    @Flag(help: "Never let the kernel read images by itself (FUSE passthrough, Linux 6.9+, needs root); every read then goes through imgfs.")
    var noPassthrough = false

    @Option(help: "How many entries after an opened list entry are loaded ahead (0: none).")
    var readAhead = 8

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Option(help: "Where the background daemon logs (default: <cache-dir>/imgfs.log).")
    var logFile: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        guard (0...1024).contains(readAhead) else { throw ValidationError("--read-ahead must be from 0 to 1024") }
    }

    func run() throws {
        let mountPath = try MountPoint.validated(mountPoint, allowNonEmpty: nonempty)
        let cacheDirectory = URL(fileURLWithPath: cacheDir ?? CacheDirectory.defaultPath)
        try CacheDirectory.create(cacheDirectory)
        if !foreground {
            let log = logFile.map { URL(fileURLWithPath: $0) } ?? cacheDirectory.appendingPathComponent("imgfs.log")
            try Background.start(mountPoint: mountPath, logFile: log)
            return
        }
        Background.detachIfDaemon()
        PurgeSignal.blockInThisAndNewThreads()
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            return handler
        }
        let logger = Logger(label: "imgfs")
        let fuseOptions = options.flatMap { $0.split(separator: ",").map(String.init) }
        let fetcher = CurlFetcher(configuration: network.fetcherConfiguration(fuseOptions: fuseOptions,
                                                                              userAgent: "imgfs/\(Imgfs.version)"),
                                  logger: logger)
        var repositoryConfiguration = try cache.repositoryConfiguration()
        repositoryConfiguration.limits = try network.limits()
        // Bodies the kernel may read by itself live in memfd files; the rest (and all, without passthrough) in memory.
        let privileged = ProcessCapabilities.hasSystemAdministration()
        let passthrough = PassthroughAvailability(requested: !noPassthrough && privileged)
        repositoryConfiguration.bodyMemory = MemfdMemory.bodyMemory(largerThan: ImageFilesystem.preloadLimit) {
            passthrough.isUsable
        }
        let repository = ImageRepository(fetcher: fetcher, memory: MemoryCache(budget: try cache.memoryBudget()),
                                         disk: try openDiskCache(in: cacheDirectory, logger: logger),
                                         configuration: repositoryConfiguration, logger: logger,
                                         diskWriter: try LowPriorityWorker(name: "imgfs-disk"))
        let registry = LongNameRegistry(directory: cacheDirectory.appendingPathComponent("names"))
        let lists = ListDirectories(store: ListStore(directory: cacheDirectory.appendingPathComponent("lists")),
                                    readAhead: ReadAhead(depth: readAhead, repository: repository),
                                    hosts: HostDirectories(tiers: repository.tiers))
        let filesystem = ImageFilesystem(repository: repository, registry: registry, logger: logger, lists: lists)
        let pressure = CombinedPressure(sources: [MemoryPressureSources.best(logger: logger), PurgeSignal.source])
        pressure.start { reason in
            repository.tiers.purgeMemory(reason: reason)
            Allocator.trim()
        }
        let mount: FuseMount
        do {
            mount = try FuseMount(filesystem: filesystem, mountPoint: mountPath, options: fuseOptions,
                                  passthrough: passthrough, logger: logger)
        } catch {
            pressure.stop()
            fetcher.shutdown()
            throw error
        }
        if !noPassthrough && !privileged {
            logger.notice("no CAP_SYS_ADMIN: the kernel cannot be handed large images to read by itself (passthrough); every read goes through imgfs")
        }
        if fuseOptions.contains("allow_other") || network.denyPrivateNetworks {
            logger.notice("refusing private network addresses (\(network.denyPrivateNetworks ? "--deny-private-networks" : "allow_other: other users can name URLs"))")
        }
        logger.notice("mounted on \(mountPath)", metadata: ["cache": "\(cacheDirectory.path)"])
        mount.serve {
            pressure.stop()
            fetcher.shutdown()
            repository.flushDiskWrites()
        }
        logger.notice("unmounted \(mountPath)")
    }

    private func openDiskCache(in directory: URL, logger: Logger) throws -> DiskCache {
        let disk = try DiskCache(directory: directory, sizeLimit: try cache.diskBudget(), logger: logger)
        DiskSweeper.start(disk, keepExpiredFor: try cache.repositoryConfiguration().expiry.lifetime, logger: logger)
        return disk
    }
}
