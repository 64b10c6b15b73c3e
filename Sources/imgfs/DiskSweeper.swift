import Foundation
import ImgfsCore
import Logging

/// Runs the disk cache's sweep at start and every 10 minutes on a background queue: leftovers of interrupted writes,
/// and, only when `keepExpiredFor` is given (`--max-stale`), entries expired for longer than that, except those of
/// hosts whose policy rule says keep-offline. Without it expired entries stay for offline use, revalidation and
/// stale-if-error until the size cap evicts them or `imgfs purge --expired` removes them.
enum DiskSweeper {
    private static let queue = DispatchQueue(label: "imgfs.disk-sweep", qos: .utility)
    nonisolated(unsafe) private static var timer: DispatchSourceTimer?

    static func start(_ disk: DiskCache, keepExpiredFor: TimeInterval?, logger: Logger) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .seconds(600))
        timer.setEventHandler {
            let now = Date()
            let before = keepExpiredFor.map { now - $0 } ?? .distantPast
            let (entries, bytes) = disk.sweep(
                now: now, removeExpiredBefore: before, keeping: ActivePolicy.keepsOffline(url:))
            if entries > 0 {
                logger.info("disk cache sweep removed \(entries) expired entries (\(Quantity.describe(bytes: bytes)))")
            }
        }
        timer.resume()
        Self.timer = timer
    }
}
