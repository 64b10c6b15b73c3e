/// The files `MemAvailableMonitor` reads; each can point at a fake for tests. A nil or missing cgroup file means
/// "no such limit".
public struct MemoryFiles: Sendable, Equatable {
    /// A meminfo file with `MemTotal` and `MemAvailable` lines (default /proc/meminfo).
    public var meminfo: String
    /// cgroup v1 `memory.limit_in_bytes`.
    public var cgroupV1Limit: String?
    /// cgroup v1 `memory.usage_in_bytes`.
    public var cgroupV1Usage: String?
    /// cgroup v2 `memory.max` of the own group ("max" means no limit).
    public var cgroupV2Max: String?
    /// cgroup v2 `memory.current` of the own group.
    public var cgroupV2Current: String?

    /// Files as given; leave a cgroup pair nil to ignore that kind of limit.
    public init(
        meminfo: String = "/proc/meminfo",
        cgroupV1Limit: String? = nil,
        cgroupV1Usage: String? = nil,
        cgroupV2Max: String? = nil,
        cgroupV2Current: String? = nil
    ) {
        self.meminfo = meminfo
        self.cgroupV1Limit = cgroupV1Limit
        self.cgroupV1Usage = cgroupV1Usage
        self.cgroupV2Max = cgroupV2Max
        self.cgroupV2Current = cgroupV2Current
    }

    /// This machine's files: /proc/meminfo, the cgroup v1 memory controller at /sys/fs/cgroup/memory, and the
    /// `memory.max`/`memory.current` of the process's own cgroup v2 group where they exist.
    public static func system() -> MemoryFiles {
        var files = MemoryFiles(
            cgroupV1Limit: CgroupPaths.root + "/memory/memory.limit_in_bytes",
            cgroupV1Usage: CgroupPaths.root + "/memory/memory.usage_in_bytes")
        if let directory = CgroupPaths.ownV2Directories().first(where: { SystemFile.exists($0 + "/memory.max") }) {
            files.cgroupV2Max = directory + "/memory.max"
            files.cgroupV2Current = directory + "/memory.current"
        }
        return files
    }
}
