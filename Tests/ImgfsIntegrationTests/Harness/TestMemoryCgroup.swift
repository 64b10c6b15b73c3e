import Foundation
import Glibc
import ImgfsTestSupport

/// A memory cgroup of a test's own, made under the test process's memory cgroup on v1 (`memory.limit_in_bytes`,
/// as on this machine's hybrid hierarchy) or v2 (`memory.max`, where the memory controller is enabled for children of
/// the test's group), with a limit; processes moved into it are charged against that limit.
///
/// Guarantees: ``make(limit:)`` returns nil, creating nothing, where neither version can be used; ``remove()`` waits
/// (up to 10 s) until the group is empty and removes it. The v2 path is not exercised on this project's machine (its
/// memory controller is on v1).
final class TestMemoryCgroup {
    enum Version { case v1, v2 }

    let path: String
    let version: Version

    private init(path: String, version: Version) {
        self.path = path
        self.version = version
    }

    /// A new group with `limit` bytes of memory, or nil without a writable memory controller.
    static func make(limit: Int) -> TestMemoryCgroup? {
        guard let (parent, version) = parentGroup() else { return nil }
        let path = "\(parent)/imgfs-test-\(getpid())-\(UUID().uuidString.prefix(6))"
        guard mkdir(path, 0o755) == 0 else { return nil }
        let group = TestMemoryCgroup(path: path, version: version)
        let file = version == .v1 ? "memory.limit_in_bytes" : "memory.max"
        guard group.write("\(limit)", to: file) else {
            group.remove()
            return nil
        }
        return group
    }

    /// Whether a group can be made here.
    static var isAvailable: Bool { parentGroup() != nil }

    /// Moves process `pid` into the group.
    func add(_ pid: pid_t) -> Bool { write("\(pid)", to: "cgroup.procs") }

    /// How many processes of the group the kernel's OOM killer has killed.
    var oomKills: Int? {
        let file = version == .v1 ? "memory.oom_control" : "memory.events"
        let text = (try? String(contentsOfFile: "\(path)/\(file)", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.dropFirst("oom_kill ".count)) }
    }

    /// The group's peak memory use in bytes (v1 `memory.max_usage_in_bytes`, v2 `memory.peak` where the kernel has it).
    var peakUsage: Int? {
        let file = version == .v1 ? "memory.max_usage_in_bytes" : "memory.peak"
        let text = (try? String(contentsOfFile: "\(path)/\(file)", encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Removes the group once its processes have exited.
    func remove() {
        Poll.until(timeout: 10, interval: 0.05) { rmdir(path) == 0 || errno == ENOENT }
    }

    private func write(_ text: String, to file: String) -> Bool {
        (try? text.write(toFile: "\(path)/\(file)", atomically: false, encoding: .utf8)) != nil
    }

    /// The test process's own memory cgroup directory where a child group can be made, and its version.
    private static func parentGroup() -> (String, Version)? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").map {
            $0.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        }
        for fields in lines where fields.count == 3 && fields[1].split(separator: ",").contains("memory") {
            let directory = "/sys/fs/cgroup/memory" + (fields[2] == "/" ? "" : String(fields[2]))
            return FileManager.default.isWritableFile(atPath: directory) ? (directory, .v1) : nil
        }
        // v2: the unified line "0::/path"; children get the memory controller only where the group enables it.
        guard let unified = lines.first(where: { $0.count == 3 && $0[0] == "0" && $0[1].isEmpty }) else { return nil }
        let directory = "/sys/fs/cgroup" + (unified[2] == "/" ? "" : String(unified[2]))
        let control = (try? String(contentsOfFile: directory + "/cgroup.subtree_control", encoding: .utf8)) ?? ""
        guard control.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("memory"),
            FileManager.default.isWritableFile(atPath: directory)
        else { return nil }
        return (directory, .v2)
    }
}
