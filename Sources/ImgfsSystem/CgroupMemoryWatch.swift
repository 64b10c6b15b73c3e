import Glibc
import ImgfsModel
import ImgfsPipeline
import Logging

/// Watches the memory limit of the process's own memory cgroup, v1 (`memory.limit_in_bytes`, `memory.usage_in_bytes`,
/// `memory.stat`) or v2 (`memory.max`, `memory.current`, `memory.stat`), by polling, because a PSI trigger on the v2
/// hierarchy never fires for a v1 limit (hybrid cgroups) and fires late for a v2 one.
///
/// Guarantees: the group is looked up again on every reading (a process moved to another group is followed); a limit
/// counts only when it is below MemTotal. Whenever the limit in force changes, `onLimit` is called with it (nil when
/// there is none any more), before any pressure report for it. Pressure is reported, edge-triggered and at most once
/// per `minimumInterval`, when the group's working set (usage minus its inactive file pages, which the kernel
/// reclaims before it kills) passes `usageFraction` of the limit. Calls come only from the watch's own thread, one at
/// a time; `stop` wakes and joins it, and no call is made after it returns.
public final class CgroupMemoryWatch: MemoryPressureSource, Sendable {
    /// One reading of the own memory cgroup.
    struct Reading: Equatable {
        var version: Int
        var path: String
        var limit: Int
        var usage: Int
        var inactiveFile: Int

        var workingSet: Int { max(0, usage - inactiveFile) }
    }

    /// How long the watch sleeps between readings.
    public let interval: Duration
    /// The fraction of the limit the working set must pass to be reported as pressure.
    public let usageFraction: Double
    /// The shortest time between two pressure reports.
    public let minimumInterval: Duration
    private let onLimit: @Sendable (Int?) -> Void
    private let logger: Logger
    private let lifecycle = PollingLifecycle()

    /// A watch reading every `interval`; `onLimit` hears of each new limit (to size caches by it).
    public init(
        interval: Duration = .milliseconds(100), usageFraction: Double = 0.7,
        minimumInterval: Duration = .milliseconds(500), logger: Logger,
        onLimit: @escaping @Sendable (Int?) -> Void
    ) {
        self.interval = interval
        self.usageFraction = usageFraction
        self.minimumInterval = minimumInterval
        self.logger = logger
        self.onLimit = onLimit
    }

    /// Starts the watch's thread, which reports pressure to `onPressure` with a reason; logs an error when the thread
    /// cannot be started.
    public func start(_ onPressure: @escaping @Sendable (String) -> Void) {
        do {
            _ = try lifecycle.start(name: "imgfs-cgroup") { wakeFD in self.run(wakeFD: wakeFD, onPressure) }
        } catch {
            logger.error("cannot start the memory cgroup watch", metadata: ["error": "\(error)"])
        }
    }

    /// Wakes and joins the watch's thread; no call is made after it returns.
    public func stop() {
        lifecycle.stop()
    }

    private func run(wakeFD: Int32, _ onPressure: @Sendable (String) -> Void) {
        var edge = PressureEdge(minimumInterval: minimumInterval)
        var limitInForce: Int?
        lifecycle.repeatEvery(interval, wakeFD: wakeFD) {
            let reading = Self.read()
            if reading?.limit != limitInForce {
                limitInForce = reading?.limit
                if let reading {
                    let limit = MemorySnapshot.mebibytes(reading.limit)
                    let group = "memory cgroup v\(reading.version) \(reading.path)"
                    logger.notice("\(group): limit \(limit); watching its usage")
                }
                onLimit(limitInForce)
            }
            var reason: String?
            if let reading, Double(reading.workingSet) > Double(reading.limit) * usageFraction {
                let used = MemorySnapshot.mebibytes(reading.workingSet), limit = MemorySnapshot.mebibytes(reading.limit)
                reason =
                    "memory cgroup v\(reading.version) working set \(used) above \(Int(usageFraction * 100)) % "
                    + "of its limit \(limit)"
            }
            if let reason = edge.record(reason), !lifecycle.isStopped { onPressure(reason) }
        }
    }

    /// The own memory cgroup's limit and usage now, v1 first (where the controller is on v1, v2 has no memory
    /// files), or nil when there is no limit below MemTotal.
    static func read(procSelfCgroup: String = "/proc/self/cgroup", root: String = CgroupPaths.root) -> Reading? {
        guard let text = SystemFile.contents(of: procSelfCgroup) else { return nil }
        let total = SystemFile.contents(of: "/proc/meminfo").flatMap { MemorySnapshot.meminfoValue("MemTotal", in: $0) }
        var candidates: [(Int, String, String, String, String, String)] = []
        if let group = CgroupPaths.parseV1MemoryGroup(text) {
            let directory = root + "/memory" + (group == "/" ? "" : group)
            candidates.append(
                (
                    1, group, directory + "/memory.limit_in_bytes", directory + "/memory.usage_in_bytes",
                    directory + "/memory.stat", "total_inactive_file"
                ))
        }
        if let group = CgroupPaths.parseV2Group(text) {
            for directory in [root, root + "/unified"].map({ $0 + (group == "/" ? "" : group) }) {
                candidates.append(
                    (
                        2, group, directory + "/memory.max", directory + "/memory.current",
                        directory + "/memory.stat", "inactive_file"
                    ))
            }
        }
        for (version, group, limitFile, usageFile, statFile, inactiveKey) in candidates {
            guard let limit = SystemFile.number(at: limitFile), limit > 0, limit < (total ?? Int.max),
                let usage = SystemFile.number(at: usageFile)
            else { continue }
            let stat = SystemFile.contents(of: statFile) ?? ""
            let inactive =
                stat.split(separator: "\n").first { $0.hasPrefix(inactiveKey + " ") }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            return Reading(version: version, path: group, limit: limit, usage: usage, inactiveFile: inactive)
        }
        return nil
    }
}
