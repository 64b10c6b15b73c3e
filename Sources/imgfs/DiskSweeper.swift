import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsWorkers
import Logging

/// Runs the disk caches' sweep at start and every 10 minutes on a background thread (`imgfs-sweep`, nice 19):
/// leftovers of interrupted writes, and, only when `keepExpiredFor` is given (`--max-stale`), entries expired for
/// longer than that, except those of hosts whose policy rule says keep-offline. Without it expired entries stay for
/// offline use, revalidation and stale-if-error until the size cap evicts them or `imgfs purge --expired` removes them.
/// The variants' disk cache (`thumb/`) is swept by the same rule: a variant carries its original's expiry, so it goes
/// when its original would.
enum DiskSweeper {
    /// Its one job sweeps, sleeps 10 minutes, and again, for the life of the process.
    private static let pool = WorkerPool(name: "imgfs-sweep", priority: .background)

    static func start(
        _ disk: DiskCache, variants: VariantStore?, keepExpiredFor: TimeInterval?, rules: RequestRulesHolder,
        logger: Logger
    ) {
        pool.submit {
            while true {
                sweep(disk, variants: variants, keepExpiredFor: keepExpiredFor, rules: rules, logger: logger)
                sleep(600)
            }
        }
    }

    private static func sweep(
        _ disk: DiskCache, variants: VariantStore?, keepExpiredFor: TimeInterval?, rules: RequestRulesHolder,
        logger: Logger
    ) {
        let now = Date()
        let before = keepExpiredFor.map { now - $0 } ?? .distantPast
        let keeping = rules.current.keepsOffline(url:)
        let (entries, bytes) = disk.sweep(now: now, removeExpiredBefore: before, keeping: keeping)
        if entries > 0 {
            logger.info("disk cache sweep removed \(entries) expired entries (\(Quantity.describe(bytes: bytes)))")
        }
        let swept = variants?.sweepDisk(now: now, removeExpiredBefore: before, keeping: keeping)
        if let swept, swept.removedEntries > 0 {
            let size = Quantity.describe(bytes: swept.removedBytes)
            logger.info("disk cache sweep removed \(swept.removedEntries) expired variants (\(size))")
        }
    }
}
