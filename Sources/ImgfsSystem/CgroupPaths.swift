/// Where the process's own cgroup files are.
enum CgroupPaths {
    /// Mount point of the cgroup hierarchies.
    static let root = "/sys/fs/cgroup"

    /// The process's cgroup v2 group path (such as "/user.slice/imgfs.service") from the `0::/path` line of
    /// /proc/self/cgroup, or nil when there is none.
    static func ownV2Group(procSelfCgroup: String = "/proc/self/cgroup") -> String? {
        guard let text = SystemFile.contents(of: procSelfCgroup) else { return nil }
        return parseV2Group(text)
    }

    /// The path of the `0::/path` line in the text of a /proc/PID/cgroup file.
    static func parseV2Group(_ text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            let path = line.dropFirst(3)
            if path.hasPrefix("/") { return String(path) }
        }
        return nil
    }

    /// The path of the cgroup v1 hierarchy holding the `memory` controller (a `N:memory:/path` or
    /// `N:cpu,memory:/path` line) in the text of a /proc/PID/cgroup file.
    static func parseV1MemoryGroup(_ text: String) -> String? {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("memory"), fields[2].hasPrefix("/")
            else { continue }
            return String(fields[2])
        }
        return nil
    }

    /// The directories that may hold the own v2 group's files: the unified mount, then the hybrid layout's
    /// /sys/fs/cgroup/unified. Empty when the process has no v2 group.
    static func ownV2Directories(procSelfCgroup: String = "/proc/self/cgroup") -> [String] {
        guard let group = ownV2Group(procSelfCgroup: procSelfCgroup) else { return [] }
        let suffix = group == "/" ? "" : group
        return [root + suffix, root + "/unified" + suffix]
    }

    /// Candidate PSI memory files, best first: the own group's `memory.pressure` where it exists, then
    /// /proc/pressure/memory.
    static func pressureFiles(procSelfCgroup: String = "/proc/self/cgroup") -> [String] {
        let groupFiles = ownV2Directories(procSelfCgroup: procSelfCgroup)
            .map { $0 + "/memory.pressure" }
            .filter(SystemFile.exists)
        return groupFiles + ["/proc/pressure/memory"]
    }
}
