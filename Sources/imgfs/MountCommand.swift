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

    @Option(
        help: ArgumentHelp(
            "Where imgfs keeps its cache and files (default: $XDG_CACHE_HOME/imgfs, else ~/.cache/imgfs); it must be "
                + "yours and writable by you alone."))
    var cacheDir: String?

    @Flag(name: [.short, .customLong("foreground")], help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Flag(help: "Mount even on a directory that is not empty (its files are hidden while mounted).")
    var nonempty = false

    @Option(
        name: .short,
        help: ArgumentHelp(
            "FUSE mount options, comma separated (e.g. allow_other: other users open files by name, and so make the "
                + "daemon fetch with its credentials; listing, rm, purge and the statistics stay yours).",
            valueName: "options"))
    var options: [String] = []

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @OptionGroup(title: "Caching")
    var cache: CacheOptions

    @OptionGroup(title: "Thumbnails")
    var thumbnails: ThumbnailOptions

    @OptionGroup(title: "Shared cache (a fleet of mounts)")
    var shared: SharedCacheOptions

    @OptionGroup(title: "Requests")
    var requests: RequestOptions

    @Flag(
        help: ArgumentHelp(
            "Never let the kernel read images by itself (FUSE passthrough, Linux 6.9+, needs root); every read then "
                + "goes through imgfs.")
    )
    var noPassthrough = false

    @Flag(
        help: ArgumentHelp(
            "Let the reads of a large image that is still arriving fill the kernel's page cache, as later reads do. "
                + "By default (with passthrough) they go straight into the reader's buffer, one copy less per byte; "
                + "this is faster for programs that read a few KiB per call without a buffer of their own.")
    )
    var noDirectColdReads = false

    @Flag(
        help: ArgumentHelp(
            "Keep large image bodies in transparent huge pages (2 MiB) instead of 256 KiB pages, in imgfs's own "
                + "tmpfs: faster rereads, but in a VM that hands free memory back to its host, a huge page from such "
                + "memory costs a host fault per 4 KiB.")
    )
    var hugePages = false

    @Flag(
        help: ArgumentHelp(
            "Keep large image bodies in memfds of 4 KiB pages instead of 256 KiB pages of a tmpfs of imgfs's own "
                + "(which Linux 6.14 and later gives; made with CAP_SYS_ADMIN, mounted nowhere).")
    )
    var smallPages = false

    @Option(help: "How many entries after an opened list entry are loaded ahead (0: none).")
    var readAhead = 8

    @Option(
        help: ArgumentHelp(
            "The kernel's read-ahead for the mount's files in KiB, which also sizes its READ requests (0: the "
                + "kernel's default, 128; setting it needs root).",
            valueName: "KiB"))
    var kernelReadAhead = 1024

    @Option(
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error, critical (below debug, the query strings of "
                + "logged URLs are shortened)."))
    var logLevel = "info"

    @Option(
        help: ArgumentHelp(
            "Where the background daemon logs (default: <cache-dir>/imgfs.log; created 0600, never through a symbolic "
                + "link); reopened on SIGHUP (imgfs reload)."))
    var logFile: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
        guard (0...1024).contains(readAhead) else { throw ValidationError("--read-ahead must be from 0 to 1024") }
        guard (0...65536).contains(kernelReadAhead) else {
            throw ValidationError("--kernel-read-ahead must be from 0 to 65536 (KiB)")
        }
        guard !(hugePages && smallPages) else {
            throw ValidationError("--huge-pages and --small-pages exclude each other")
        }
    }

    func run() throws {
        let mountPath = try MountPoint.validated(mountPoint, allowNonEmpty: nonempty)
        let cacheDirectory = URL(fileURLWithPath: cacheDir ?? CacheDirectory.defaultPath)
        try CacheDirectory.prepare(cacheDirectory)
        // An invalid policy file fails the mount here, on the terminal, with its file, line and reason.
        let hostRules = try requests.hostRules()
        let log = logFile.map { URL(fileURLWithPath: $0) } ?? cacheDirectory.appendingPathComponent("imgfs.log")
        if !foreground {
            try Background.start(mountPoint: mountPath, logFile: log)
            return
        }
        Background.detachIfDaemon()
        Allocator.keepFreedMemory()
        HangUpHandler.blockSignal()
        PurgeSignal.blockInThisAndNewThreads()
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            // Signed links' tokens stay out of the log unless it is asked for everything.
            return level > .debug ? QueryShorteningLogHandler(wrapping: handler) : handler
        }
        let logger = Logger(label: "imgfs")
        // The mount's rules: each request and each name takes the snapshot in force when it is made.
        let rules = RequestRulesHolder(hostRules)
        logger.info(
            "request rules: \(hostRules.rules.count) policy rules",
            metadata: ["headers": "\(hostRules.profile(for: "").masked)"])
        let hangUp = HangUpHandler(
            policy: requests.policyFile.map {
                PolicyReloader(path: $0, defaults: requests.defaults, rules: rules, logger: logger)
            },
            logFile: Background.isDaemon ? log.path : nil, logger: logger)
        var fuseOptions = options.flatMap { $0.split(separator: ",").map(String.init) }
        // Other users who can reach the mount get from the kernel what its modes say: they open files by name, and only
        // the owner lists, evicts and purges (the filesystem checks the caller too).
        if fuseOptions.contains("allow_other") && !fuseOptions.contains("default_permissions") {
            fuseOptions.append("default_permissions")
        }
        var fetcherConfiguration = try network.fetcherConfiguration(
            fuseOptions: fuseOptions,
            userAgent: "imgfs/\(Imgfs.version)")
        requests.applyProxy(to: &fetcherConfiguration)
        let fetcher = CurlFetcher(configuration: fetcherConfiguration, logger: logger)
        var repositoryConfiguration = try cache.repositoryConfiguration()
        repositoryConfiguration.limits = try network.limits()
        repositoryConfiguration.addressPolicy = fetcherConfiguration.addressPolicy
        repositoryConfiguration.rules = rules
        repositoryConfiguration.sharedTier = try shared.tier(
            origin: fetcher, network: network, fuseOptions: fuseOptions,
            expiry: repositoryConfiguration.expiry, logger: logger)
        // Bodies the kernel may read by itself live in shared-memory files, in large pages of a tmpfs of imgfs's own
        // unless --small-pages; the rest (and all, without passthrough) in the heap.
        let privileged = ProcessCapabilities.hasSystemAdministration()
        let passthrough = PassthroughAvailability(requested: !noPassthrough && privileged)
        var tmpfs: PrivateTmpfs?
        if passthrough.requested && !smallPages {
            tmpfs = PrivateTmpfs.shared
            if let reason = PrivateTmpfs.unavailableReason {
                logger.notice("large image bodies go to memfds in 4 KiB pages (no tmpfs of imgfs's own: \(reason))")
            }
        }
        repositoryConfiguration.bodyMemory = SharedMemoryFile.bodyMemory(
            largerThan: ImageFilesystem.preloadLimit, in: tmpfs, pages: hugePages ? .huge : .large
        ) { passthrough.isUsable }
        let memoryCache = MemoryCache(budget: try cache.memoryBudget())
        let disk = requests.noDiskCache ? nil : try openDiskCache(in: cacheDirectory, logger: logger)
        let repository = ImageRepository(
            fetcher: repositoryConfiguration.sharedTier ?? fetcher, memory: memoryCache, disk: disk,
            configuration: repositoryConfiguration, logger: logger,
            diskWriter: try LowPriorityWorker(name: "imgfs-disk"))
        // Digest names live in memory and in the cache entries themselves; earlier versions kept a folder of them.
        try? FileManager.default.removeItem(at: cacheDirectory.appendingPathComponent("names"))
        let registry = LongNameRegistry()
        let variants = try thumbnails.makeStore(
            repository: repository,
            cacheDirectory: requests.noDiskCache ? nil : cacheDirectory,
            memoryBudget: try cache.memoryBudget(), diskBudget: try cache.diskBudget(),
            expiry: repositoryConfiguration.expiry, logger: logger)
        if let disk {
            DiskSweeper.start(
                disk, variants: variants, keepExpiredFor: try cache.keepExpired(), rules: rules, logger: logger)
        }
        let lists = ListDirectories(
            store: ListStore(directory: cacheDirectory.appendingPathComponent("lists")),
            readAhead: ReadAhead(depth: readAhead, repository: repository),
            hosts: HostDirectories(tiers: repository.tiers))
        let filesystem = ImageFilesystem(
            repository: repository, registry: registry,
            placeholder: try requests.placeholderImage(), logger: logger,
            variants: variants, lists: lists, reloadStatus: hangUp.status)
        // The memory cgroup's limit caps the cache's budget (an eighth of it: transfers, queued disk writes, readers'
        // buffers and the allocator need the rest), and its usage is watched on v1 and v2, where PSI may never fire.
        let cgroupWatch = CgroupMemoryWatch(logger: logger) { limit in
            let budget = memoryCache.limit(to: limit.map { $0 / 8 })
            let why = limit == nil ? "" : " (an eighth of the memory cgroup limit)"
            logger.notice("memory cache budget \(Quantity.describe(bytes: budget))\(why)")
        }
        let pressure = CombinedPressure(sources: [
            MemoryPressureSources.best(logger: logger), cgroupWatch,
            PurgeSignal.source
        ])
        pressure.start { reason in
            repository.tiers.purgeMemory(reason: reason)
            variants.purgeMemory()
            Allocator.trim()
        }
        let mount: FuseMount
        do {
            mount = try FuseMount(
                filesystem: filesystem, mountPoint: mountPath, options: fuseOptions,
                passthrough: passthrough, readAheadKiB: kernelReadAhead, directReadsWhileArriving: !noDirectColdReads,
                logger: logger)
        } catch {
            pressure.stop()
            fetcher.shutdown()
            throw error
        }
        hangUp.start()
        if !noPassthrough && !privileged {
            logger.notice(
                """
                no CAP_SYS_ADMIN: the kernel cannot be handed large images to read by itself (passthrough); every \
                read goes through imgfs
                """
            )
        }
        if fuseOptions.contains("allow_other") || network.denyPrivateNetworks {
            logger.notice(
                """
                refusing private network addresses (\(network.denyPrivateNetworks
                    ? "--deny-private-networks" : "allow_other: other users can name URLs"))
                """
            )
        }
        logger.notice("mounted on \(mountPath)", metadata: ["cache": "\(cacheDirectory.path)"])
        mount.serve {
            pressure.stop()
            fetcher.shutdown()
            repository.flushDiskWrites()
            variants.flushDiskWrites()
        }
        logger.notice("unmounted \(mountPath)")
    }

    private func openDiskCache(in directory: URL, logger: Logger) throws -> DiskCache {
        let expiry = try cache.repositoryConfiguration().expiry
        // --disk-limit covers images and variants: the variants' share is theirs, the images have the rest.
        let budget = try cache.diskBudget()
        return try DiskCache(
            directory: directory, sizeLimit: budget - ThumbnailOptions.diskShare(of: budget), logger: logger,
            expiry: { expiry.expiry(of: $0) })
    }
}
