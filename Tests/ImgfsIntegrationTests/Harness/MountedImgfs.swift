import Foundation
import ImgfsModel
import ImgfsTestSupport

/// The real imgfs binary mounted in the foreground on a fresh temporary directory, with its own cache directory.
///
/// `stop()` unmounts (fusermount3 -u), waits for the daemon to exit and removes the directory; it kills the daemon
/// by PID and lazily unmounts if it does not exit. Tests call it in a `defer`, so a failing test cleans up too.
final class MountedImgfs: @unchecked Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    let root: String
    let mountPoint: String
    let cacheDirectory: String
    let logPath: String
    let process: ChildProcess
    private var stopped = false

    /// The imgfs binary: $IMGFS_BINARY, else the debug build of this package.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["IMGFS_BINARY"] { return path }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return package.appendingPathComponent(".build/debug/imgfs").path
    }

    /// Mounts with `arguments`; `environment` (nil: this process's) is the daemon's environment. A `launcher` (a
    /// command that ends by executing its arguments, such as `nsenter --net=…`) starts the daemon, keeping its PID.
    init(
        arguments: [String] = [], cacheDirectory: String? = nil, environment: [String: String]? = nil,
        launcher: [String] = []
    ) throws {
        root = try Self.makeTemporaryDirectory()
        mountPoint = "\(root)/mnt"
        self.cacheDirectory = cacheDirectory ?? "\(root)/cache"
        logPath = "\(root)/imgfs.log"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let command =
            launcher + [
                Self.binary, "mount", mountPoint, "--foreground", "--cache-dir", self.cacheDirectory,
                "--log-level", "debug"
            ] + arguments
        process = try ChildProcess.spawn(
            command[0], Array(command.dropFirst()), environment: environment, outputPath: logPath)
        guard Poll.until(timeout: 15, { isMounted || !process.isRunning }), isMounted else {
            stop()
            throw StartFailure(description: "imgfs did not mount; log:\n\(log)")
        }
    }

    deinit { stop() }

    /// Whether the mount point is an imgfs mount now.
    var isMounted: Bool { ProcessStatus.isImgfsMount(mountPoint) }

    /// The daemon's log so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The full path of the plain name of `url`.
    func path(_ url: String) -> String { "\(mountPoint)/img/\(NameCodec.encode(url))" }

    /// The parsed `.imgfs/stats.json`, flattened to `repository.memory_bytes`-style keys.
    func statistics() -> [String: Double] {
        guard let data = FileManager.default.contents(atPath: "\(mountPoint)/.imgfs/stats.json"),
            let object = try? JSONSerialization.jsonObject(with: data)
        else { return [:] }
        var flat: [String: Double] = [:]
        func walk(_ value: Any, _ path: String) {
            if let dictionary = value as? [String: Any] {
                for (key, child) in dictionary { walk(child, path.isEmpty ? key : "\(path).\(key)") }
            } else if let number = value as? NSNumber {
                flat[path] = number.doubleValue
            }
        }
        walk(object, "")
        return flat
    }

    /// Waits (up to `timeout` seconds) until `condition` holds for the daemon's log; returns whether it did.
    func waitForLog(timeout: Double = 10, _ condition: (String) -> Bool) -> Bool {
        Poll.until(timeout: timeout, interval: 0.02) { condition(log) }
    }

    /// Waits (up to `timeout` seconds) until `condition` holds for the statistics; returns whether it did.
    func waitForStatistics(timeout: Double = 10, _ condition: ([String: Double]) -> Bool) -> Bool {
        Poll.until(timeout: timeout, interval: 0.02) { condition(statistics()) }
    }

    /// Unmounts and waits for the daemon; returns its exit status (nil if it had to be killed).
    @discardableResult
    func stop() -> Int32? {
        guard !stopped else { return nil }
        stopped = true
        var status: Int32? = nil
        // A program that still has a file of the mount open makes the unmount fail with EBUSY: a reader the test
        // started that has not exited yet, or a child of a concurrent test that inherited a descriptor. Try again for
        // a while rather than wait for an exit that cannot come.
        Poll.until(timeout: 10, interval: 0.05) {
            !isMounted || (try? ChildProcess.run("/usr/bin/fusermount3", ["-u", mountPoint], timeout: 10))?.status == 0
        }
        status = process.wait(timeout: 10)
        if status == nil {
            process.kill9AndReap()
            _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", "-z", mountPoint], timeout: 10)
        }
        try? FileManager.default.removeItem(atPath: root)
        return status
    }

    private static func makeTemporaryDirectory() throws -> String {
        let path = "/tmp/imgfs-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
