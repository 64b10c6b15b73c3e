import Foundation

/// Fields of `/proc/PID/status` and the mount table, as the tests read them.
enum ProcessStatus {
    /// `VmRSS`, `VmHWM` or another kB field of `pid`'s status, in bytes (-1 when unreadable).
    static func bytes(_ pid: pid_t, _ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("\(field):") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kib * 1024
    }

    /// Whether `mountPoint` is an imgfs mount now (this process's mount table).
    static func isImgfsMount(_ mountPoint: String) -> Bool {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").contains { $0.contains(" \(mountPoint) ") && $0.contains(" fuse.imgfs ") }
    }
}
