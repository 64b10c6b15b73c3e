import Foundation
import Glibc
import ImgfsTestSupport

/// The real imgfs binary mounted the way users do it, `imgfs mount DIR` without `-f`: the daemon runs in the
/// background and logs to `<cache>/imgfs.log`.
///
/// Guarantees: `stop()` unmounts (fusermount3 -u, lazily if that fails), waits up to 10 s for the daemon to exit
/// and kills it by PID if it does not, then removes the directories; it runs at most once, and from `deinit` too.
final class BackgroundMount: @unchecked Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    let root: String
    let mountPoint: String
    let cacheDirectory: String
    /// The daemon's PID, from its stats.json.
    private(set) var pid: pid_t = 0
    private var stopped = false

    var logPath: String { "\(cacheDirectory)/imgfs.log" }

    init(arguments: [String] = []) throws {
        root = "/tmp/imgfs-test-\(getpid())-bg-\(UUID().uuidString.prefix(8))"
        mountPoint = "\(root)/mnt"
        cacheDirectory = "\(root)/cache"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let result = try ChildProcess.run(
            MountedImgfs.binary, ["mount", mountPoint, "--cache-dir", cacheDirectory] + arguments, timeout: 30)
        let statistics =
            FileManager.default.contents(atPath: "\(mountPoint)/.imgfs/stats.json").flatMap {
                try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
            } ?? [:]
        pid = pid_t(statistics["pid"] as? Int ?? 0)
        guard result.status == 0, pid > 0 else {
            stop()
            throw StartFailure(description: "imgfs mount failed (\(result.status)): \(result.output)")
        }
    }

    deinit { stop() }

    /// Whether the mount point is an imgfs mount now.
    var isMounted: Bool { ProcessStatus.isImgfsMount(mountPoint) }

    /// Whether the daemon process still exists.
    var daemonIsRunning: Bool { pid > 0 && kill(pid, 0) == 0 }

    /// Unmounts, waits for the daemon (killing it if need be) and removes the directories.
    func stop() {
        guard !stopped else { return }
        stopped = true
        Poll.until(timeout: 10, interval: 0.05) {
            !isMounted || (try? ChildProcess.run("/usr/bin/fusermount3", ["-u", mountPoint], timeout: 10))?.status == 0
        }
        if isMounted { _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", "-z", mountPoint], timeout: 10) }
        if pid > 0 && !Poll.until(timeout: 10, interval: 0.05, { kill(pid, 0) != 0 }) { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: root)
    }
}
