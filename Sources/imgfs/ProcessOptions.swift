import ArgumentParser
import Foundation
import ImgfsModel
import Logging

/// The options of `imgfs mount` about the mount itself and the process serving it: FUSE options, foreground, log.
///
/// Guarantees: ``fuseOptions`` never holds `nonempty` (imgfs checks the mount point itself, libfuse 3 refuses it) and
/// holds `default_permissions` whenever it holds `allow_other`.
struct ProcessOptions: ParsableArguments {
    @Option(
        name: .short,
        help: ArgumentHelp(
            "Mount options, comma separated: FUSE's (allow_other: other users open files by name, and so make the "
                + "daemon fetch with its credentials; listing, rm, purge and the statistics stay yours), nonempty "
                + "(mount on a directory that is not empty, hiding its files), and any imgfs option as name=value.",
            valueName: "options"))
    var options: [String] = []

    @Flag(name: [.short, .customLong("foreground")], help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Option(
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error, critical (below debug, the query strings of "
                + "logged URLs are shortened)."))
    var logLevel = "info"

    @Option(
        help: ArgumentHelp(
            "Where the background daemon logs (default: <cache-dir>/imgfs.log; created 0600, never through a symbolic "
                + "link); reopened on SIGHUP (imgfs reload)."))
    var logFile: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
    }

    private var items: [String] { options.flatMap { $0.split(separator: ",").map(String.init) } }

    /// Whether `-o nonempty` allows a mount point that is not empty.
    var allowsNonEmpty: Bool { items.contains("nonempty") }

    /// The options handed to libfuse. Other users who can reach the mount get from the kernel what its modes say:
    /// they open files by name, and only the owner lists, evicts and purges (the filesystem checks the caller too).
    var fuseOptions: [String] {
        var fuse = items.filter { $0 != "nonempty" }
        if fuse.contains("allow_other") && !fuse.contains("default_permissions") { fuse.append("default_permissions") }
        return fuse
    }

    /// The daemon's log file: `--log-file`, else `imgfs.log` in `cacheDirectory`.
    func logFile(in cacheDirectory: URL) -> URL {
        logFile.map { URL(fileURLWithPath: $0) } ?? cacheDirectory.appendingPathComponent("imgfs.log")
    }

    /// Sends the log to stderr at `--log-level` (which the daemon's stderr, its log file, receives).
    func startLogging() -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            // Signed links' tokens stay out of the log unless it is asked for everything.
            return level > .debug ? QueryShorteningLogHandler(wrapping: handler) : handler
        }
        return Logger(label: "imgfs")
    }
}
