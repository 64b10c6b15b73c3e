import ArgumentParser
import Foundation
import Glibc
import ImgfsModel

/// Running the mount in the background: the command starts itself again in the foreground with its output going to
/// a log file, and returns once the mount is ready (or prints why it failed).
enum Background {
    private static let marker = "IMGFS_DAEMON"

    /// Starts the daemon and waits (up to 15 s) until `mountPoint` is an imgfs mount.
    static func start(mountPoint: String, logFile: URL) throws {
        let log = FileHandle(fileDescriptor: try LogFile.open(logFile.path), closeOnDealloc: true)
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

/// The daemon's log file: it holds the URLs the mount fetched and why they failed, so it is its user's alone.
enum LogFile {
    /// Why the log file cannot be used.
    struct Unusable: Error, CustomStringConvertible {
        let path: String
        let reason: String

        var description: String { "cannot open the log file \(path): \(reason)" }
    }

    /// Opens `path` for appending: created 0600 when missing, never through a symbolic link (`O_NOFOLLOW`), refused
    /// when it belongs to another user, and made 0600 when it was readable by others. Returns the descriptor.
    static func open(_ path: String) throws(Unusable) -> Int32 {
        let descriptor = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            throw Unusable(path: path, reason: reason)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_uid == geteuid() else {
            close(descriptor)
            throw Unusable(path: path, reason: "it belongs to user \(status.st_uid), not to this user (\(geteuid()))")
        }
        if status.st_mode & 0o077 != 0 { fchmod(descriptor, 0o600) }
        return descriptor
    }
}
