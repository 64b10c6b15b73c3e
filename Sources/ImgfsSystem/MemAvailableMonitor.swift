import Glibc
import ImgfsModel
import ImgfsPipeline
import Logging

/// Memory pressure by polling: reads MemAvailable and MemTotal from a meminfo file every `interval` and reports when
/// MemAvailable drops below a threshold, or when a cgroup (v1 `memory.limit_in_bytes`/`memory.usage_in_bytes`, v2
/// `memory.max`/`memory.current`) whose limit is below MemTotal is used above `cgroupUsageFraction` of it.
///
/// Guarantees: edge-triggered (one call when pressure starts, none while it lasts) and at most one call per
/// `minimumInterval`; the first reading is taken at `start`, so a machine already short of memory is reported once;
/// `onPressure` is called only from the monitor's own thread (never twice at once), which has SIGINT, SIGTERM and
/// SIGHUP blocked; `stop` wakes and joins that thread, is idempotent, and no call is made after it returns. A monitor
/// is started once; after `stop` it stays stopped. Unreadable files are skipped (logged once).
public final class MemAvailableMonitor: MemoryPressureSource, Sendable {
    /// The files read on each tick.
    public let files: MemoryFiles
    /// The MemAvailable level (bytes) under which memory counts as short; nil for max(5 % of MemTotal, 256 MiB).
    public let thresholdBytes: Int?
    /// The share of a cgroup limit above which its usage counts as pressure.
    public let cgroupUsageFraction: Double
    /// The time between two readings.
    public let interval: Duration
    /// The least time between two calls of `onPressure`.
    public let minimumInterval: Duration

    private let logger: Logger
    private let lifecycle = PollingLifecycle()

    /// A monitor of `files` (this machine's by default) with the given threshold, reading every `interval`.
    public init(
        files: MemoryFiles = .system(),
        thresholdBytes: Int? = nil,
        cgroupUsageFraction: Double = 0.9,
        interval: Duration = .seconds(1),
        minimumInterval: Duration = .seconds(5),
        logger: Logger
    ) {
        self.files = files
        self.thresholdBytes = thresholdBytes
        self.cgroupUsageFraction = cgroupUsageFraction
        self.interval = interval
        self.minimumInterval = minimumInterval
        self.logger = logger
    }

    /// Starts the polling thread and returns at once. Ignored (with a log line) when already started or stopped.
    public func start(_ onPressure: @escaping @Sendable (_ reason: String) -> Void) {
        let started: Bool
        do {
            started = try lifecycle.start(name: "imgfs-meminfo") { wakeFD in
                self.run(wakeFD: wakeFD, onPressure: onPressure)
            }
        } catch {
            logger.error("cannot start the memory monitor thread", metadata: ["error": "\(error)"])
            return
        }
        if started {
            logger.info(
                "watching memory by polling",
                metadata: [
                    "meminfo": "\(files.meminfo)", "interval": "\(interval)",
                    "threshold": "\(thresholdBytes.map(MemorySnapshot.mebibytes) ?? "max(5 % of MemTotal, 256 MiB)")"
                ])
        } else {
            logger.debug("memory monitor not started (already started or stopped)")
        }
    }

    /// Stops the polling thread and joins it; idempotent. Called from inside `onPressure` it returns at once and the
    /// thread ends when the handler returns.
    public func stop() {
        lifecycle.stop()
    }

    private func run(wakeFD: Int32, onPressure: @Sendable (String) -> Void) {
        var edge = PressureEdge(minimumInterval: minimumInterval)
        var warnedUnreadable = false
        lifecycle.repeatEvery(interval, wakeFD: wakeFD) {
            let snapshot = MemorySnapshot.read(files)
            if snapshot.available == nil && !warnedUnreadable {
                warnedUnreadable = true
                logger.warning("cannot read MemAvailable", metadata: ["file": "\(files.meminfo)"])
            }
            let reason = snapshot.pressure(threshold: thresholdBytes, usageFraction: cgroupUsageFraction)
            if let reason = edge.record(reason), !lifecycle.isStopped {
                onPressure(reason)
            }
        }
    }
}
