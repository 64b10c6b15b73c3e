import ArgumentParser
import Foundation
import ImgfsCore

/// Running the mount in the background: the command starts itself again in the foreground with its output going to
/// a log file, and returns once the mount is ready (or prints why it failed).
enum Background {
    private static let marker = "IMGFS_DAEMON"

    /// Starts the daemon and waits (up to 15 s) until `mountPoint` is an imgfs mount.
    static func start(mountPoint: String, logFile: URL) throws {
        if !FileManager.default.fileExists(atPath: logFile.path) {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: logFile)
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = Array(CommandLine.arguments.dropFirst()) + ["--foreground"]
        var environment = ProcessInfo.processInfo.environment
        environment[marker] = "1"
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            if MountPoint.isMounted(mountPoint) {
                print("imgfs: mounted on \(mountPoint) (log: \(logFile.path))")
                return
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let tail =
            (try? String(contentsOf: logFile, encoding: .utf8))?.split(separator: "\n").suffix(5).joined(
                separator: "\n") ?? ""
        throw MountPoint.Unusable(description: "the mount did not come up; last log lines:\n\(tail)")
    }

    /// Whether this process is the daemon started by ``start(mountPoint:logFile:)`` (its output goes to the log file).
    static var isDaemon: Bool { ProcessInfo.processInfo.environment[marker] == "1" }

    /// In the daemon started by ``start(mountPoint:logFile:)``: leaves the terminal's session so its hang-up and
    /// Ctrl-C do not reach the daemon.
    static func detachIfDaemon() {
        if isDaemon { setsid() }
    }
}
