import Foundation
import ImgfsCurl
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsSystem
import ImgfsWorkers
import Logging

/// The steps of ``MountCommand/run()``, in the order it takes them.
extension MountCommand {
    /// Makes this process the daemon: detached from `imgfs mount`'s terminal when it was started in the background,
    /// freed memory kept for reuse, the signals its handlers wait for blocked, and logging started.
    static func startDaemonProcess(_ process: ProcessOptions) -> Logger {
        Background.detachIfDaemon()
        Allocator.keepFreedMemory()
        SignalThread.blockHandledSignals()
        return process.startLogging()
    }

    /// The mount's request rules, made of `hostRules` (each request and each name takes the snapshot in force when
    /// it is made), and the SIGHUP handler that rereads them (and reopens the log).
    func applyRequestRules(
        _ hostRules: HostRules, cacheDirectory: URL, logger: Logger
    ) -> (rules: RequestRulesHolder, hangUp: HangUpHandler) {
        let rules = RequestRulesHolder(hostRules)
        logger.info(
            "request rules: \(hostRules.rules.count) policy rules",
            metadata: ["headers": "\(hostRules.profile(for: "").masked)"])
        let reloader = requests.policyFile.map {
            PolicyReloader(path: $0, defaults: requests.defaults, rules: rules, logger: logger)
        }
        let hangUp = HangUpHandler(
            policy: reloader, logFile: Background.isDaemon ? process.logFile(in: cacheDirectory).path : nil,
            logger: logger)
        return (rules, hangUp)
    }

    /// The libcurl fetcher the network and request options describe.
    func makeFetcher(tuning: Tuning, logger: Logger) -> CurlFetcher {
        var configuration = network.fetcherConfiguration(
            fuseOptions: process.fuseOptions, tuning: tuning, userAgent: "imgfs/\(Imgfs.version)")
        requests.applyProxy(to: &configuration)
        return CurlFetcher(configuration: configuration, logger: logger)
    }

    /// The repository (memory, disk and shared tiers in front of `fetcher`), the variants and lists, and the
    /// filesystem over them.
    func makeFilesystem(
        fetcher: CurlFetcher, rules: RequestRulesHolder, cacheDirectory: URL, tuning: Tuning,
        reloadStatus: ReloadStatus, logger: Logger
    ) throws -> MountParts {
        var configuration = try cache.repositoryConfiguration(failureMemory: tuning.failureMemory)
        configuration.rules = rules
        configuration.limits = try network.limits()
        configuration.addressPolicy = network.addressPolicy(fuseOptions: process.fuseOptions)
        configuration.sharedTier = try shared.tier(
            origin: fetcher, addressPolicy: configuration.addressPolicy,
            requireImage: configuration.limits.requireImage, tuning: tuning, expiry: configuration.expiry,
            logger: logger)
        let privileged = ProcessCapabilities.hasSystemAdministration()
        let passthrough = PassthroughAvailability(requested: tuning.passthrough && privileged)
        configuration.bodyMemory = Self.bodyMemory(passthrough: passthrough, pages: tuning.pages, logger: logger)
        let memoryCache = MemoryCache(budget: try cache.memoryBudget())
        let disk = cache.usesDisk ? try openDiskCache(in: cacheDirectory, logger: logger) : nil
        let repository = ImageRepository(
            fetcher: configuration.sharedTier ?? fetcher, memory: memoryCache, disk: disk,
            configuration: configuration, logger: logger,
            diskWriter: WorkerPool(name: "imgfs-disk", priority: .background))
        // Digest names live in memory and in the cache entries themselves; earlier versions kept a folder of them.
        try? FileManager.default.removeItem(at: cacheDirectory.appendingPathComponent("names"))
        let variants = try thumbnails.makeStore(
            repository: repository, cacheDirectory: cache.usesDisk ? cacheDirectory : nil,
            memoryBudget: try cache.memoryBudget(), diskBudget: try cache.diskBudget(),
            expiry: configuration.expiry, tuning: tuning, logger: logger)
        if let disk {
            DiskSweeper.start(
                disk, variants: variants, keepExpiredFor: try cache.keepExpired(), rules: rules, logger: logger)
        }
        let listStore = ListStore(directory: cacheDirectory.appendingPathComponent("lists"), writesFacts: true)
        let lists = ListDirectories(
            store: listStore,
            readAhead: ReadAhead(depth: tuning.readAhead, repository: repository),
            hosts: HostDirectories(tiers: repository.tiers),
            warmer: try warmer(listStore, repository: repository, tuning: tuning, logger: logger))
        let filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(), placeholder: try requests.placeholderImage(),
            logger: logger, variants: variants, lists: lists, reloadStatus: reloadStatus)
        return MountParts(
            repository: repository, memoryCache: memoryCache, variants: variants, filesystem: filesystem,
            passthrough: passthrough, passthroughNeedsPrivilege: tuning.passthrough && !privileged,
            warmer: lists.warmer)
    }

    /// Bodies the kernel may read by itself live in shared-memory files, in large pages of a tmpfs of imgfs's own
    /// unless `pages=small`; the rest (and all, without passthrough) in the heap.
    static func bodyMemory(
        passthrough: PassthroughAvailability, pages: Tuning.Pages, logger: Logger
    ) -> BodyMemory {
        var tmpfs: PrivateTmpfs?
        if passthrough.requested && pages != .small {
            tmpfs = PrivateTmpfs.shared
            if let reason = PrivateTmpfs.unavailableReason {
                logger.notice("large image bodies go to memfds in 4 KiB pages (no tmpfs of imgfs's own: \(reason))")
            }
        }
        return SharedMemoryFile.bodyMemory(
            largerThan: ImageFilesystem.preloadLimit, in: tmpfs, pages: pages == .huge ? .huge : .large
        ) { passthrough.isUsable }
    }

    /// Starts purging memory under pressure. The memory cgroup's limit caps the cache's budget (an eighth of it:
    /// transfers, queued disk writes, readers' buffers and the allocator need the rest), and its usage is watched on
    /// v1 and v2, where PSI may never fire.
    static func watchMemoryPressure(_ parts: MountParts, manual: ManualPressure, logger: Logger) -> CombinedPressure {
        let cgroupWatch = CgroupMemoryWatch(logger: logger) { limit in
            let budget = parts.memoryCache.limit(to: limit.map { $0 / 8 })
            let why = limit == nil ? "" : " (an eighth of the memory cgroup limit)"
            logger.notice("memory cache budget \(Quantity.describe(bytes: budget))\(why)")
        }
        let pressure = CombinedPressure(sources: [
            MemoryPressureSources.best(logger: logger), cgroupWatch, manual
        ])
        pressure.start { reason in
            parts.repository.tiers.purgeMemory(reason: reason)
            parts.variants.purgeMemory()
            Allocator.trim()
        }
        return pressure
    }

    /// Starts the thread that answers the daemon's signals: SIGHUP reloads, SIGUSR1 purges the memory caches,
    /// SIGINT and SIGTERM end the request loop (the mount then unmounts as after `fusermount3 -u`).
    static func answerSignals(hangUp: HangUpHandler, purge: ManualPressure, mount: FuseMount, logger: Logger) throws {
        let stopper = mount.stopper
        try SignalThread.start { request in
            switch request {
            case .reload: hangUp.reload()
            case .purge: purge.fire(reason: "SIGUSR1")
            case .terminate:
                logger.notice("asked to stop (SIGINT or SIGTERM)")
                stopper.stop()
            }
        }
    }

    /// Mounts `parts.filesystem` at `mountPath` with the FUSE options and the kernel settings of `tuning`.
    func mountFilesystem(_ parts: MountParts, at mountPath: String, tuning: Tuning, logger: Logger) throws -> FuseMount
    {
        try FuseMount(
            filesystem: parts.filesystem, mountPoint: mountPath, options: process.fuseOptions,
            passthrough: parts.passthrough, readAheadKiB: tuning.kernelReadAheadKiB,
            directReadsWhileArriving: tuning.directColdReads, logger: logger)
    }

    /// Logs what the mount is serving with that a user would not otherwise know.
    func announce(_ mountPath: String, cacheDirectory: URL, parts: MountParts, logger: Logger) {
        if parts.passthroughNeedsPrivilege {
            logger.notice(
                """
                no CAP_SYS_ADMIN: the kernel cannot be handed large images to read by itself (passthrough); every \
                read goes through imgfs
                """
            )
        }
        if process.fuseOptions.contains("allow_other") || network.denyPrivateNetworks {
            logger.notice(
                """
                refusing private network addresses (\(network.denyPrivateNetworks
                    ? "--deny-private-networks" : "allow_other: other users can name URLs"))
                """
            )
        }
        logger.notice("mounted on \(mountPath)", metadata: ["cache": "\(cacheDirectory.path)"])
    }

    /// The images' disk cache: `--disk-limit` covers images and variants; the variants' share is theirs, the images
    /// have the rest.
    private func openDiskCache(in directory: URL, logger: Logger) throws -> DiskCache {
        let expiry = try cache.repositoryConfiguration().expiry
        let budget = try cache.diskBudget()
        return try DiskCache(
            directory: directory, sizeLimit: budget - ThumbnailOptions.diskShare(of: budget), logger: logger,
            expiry: expiry.diskExpiry)
    }
}
