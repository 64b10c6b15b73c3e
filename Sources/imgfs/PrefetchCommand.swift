import ArgumentParser
import Foundation
import ImgfsModel

/// `imgfs prefetch MOUNTPOINT [FILE|-]`: warms a mount's cache with a list of URLs by reading each URL's file
/// through the mount (see ``Prefetcher``), shows progress on a terminal, and reports what failed.
///
/// Exit status: 0 when every URL was read, 1 when any failed, 2 when the mount point is not an imgfs mount or the
/// list cannot be read.
struct PrefetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Warm a mount's cache: read the file of every URL in a list through the mount.",
        discussion: """
            The list has one URL a line; blank lines and lines starting with # are skipped. Each image is read \
            whole (fetched, checked and cached) and discarded. On a terminal a progress line is shown on stderr: the \
            bytes read of those expected, and an ETA by bytes, `unknown` until every file left has a known size. \
            At the end a `failed: <url>: <reason>` line is printed for each failure, then \
            `prefetched N of M images (...), F failed`. Exit status: 0 if all succeeded, 1 if any failed, 2 on a \
            usage error (not a mount, unreadable list).
            """
    )

    @Argument(help: "The mount point of a running imgfs mount.")
    var mountPoint: String

    @Argument(help: "The file that lists the URLs; - or nothing for standard input.")
    var file: String?

    @Option(help: "How many URLs to read at once.")
    var concurrency = 16

    @Flag(help: "Show no progress line; print only the failures and the summary.")
    var quiet = false

    @Flag(help: "Print the summary as a JSON object (total, succeeded, failed, bytes, seconds, failures).")
    var json = false

    /// The largest `--concurrency` accepted (each is a thread).
    static let maximumConcurrency = 1024

    func run() throws {
        guard (1...Self.maximumConcurrency).contains(concurrency) else {
            throw usageError("--concurrency must be from 1 to \(Self.maximumConcurrency)")
        }
        let mount = try imgfsMount()
        let urls: [String]
        do {
            urls = try URLList.read(from: file)
        } catch {
            throw usageError(error.description)
        }
        let prefetcher = Prefetcher(urls: urls, mountPoint: mount)
        prefetcher.run(concurrency: concurrency, progress: quiet ? nil : TerminalProgress.standardError())
        let report = PrefetchReport(prefetcher.tally.snapshot(), failures: prefetcher.tally.failures())
        FileHandle.standardOutput.write(Data((json ? try report.json() : report.text).utf8))
        if report.failed > 0 { throw ExitCode.failure }
    }

    /// The absolute path of the mount, or a usage error when it is not a running imgfs mount.
    private func imgfsMount() throws -> String {
        let path = URL(fileURLWithPath: mountPoint).standardizedFileURL.resolvingSymlinksInPath().path
        let statistics = "\(path)/.imgfs/stats.json"
        guard MountPoint.isMounted(path) || FileManager.default.fileExists(atPath: statistics) else {
            throw usageError("\(path) is not an imgfs mount")
        }
        return path
    }

    /// Prints `message` and gives the exit status of usage errors, 2.
    private func usageError(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("imgfs prefetch: \(message)\n".utf8))
        return ExitCode(2)
    }
}
