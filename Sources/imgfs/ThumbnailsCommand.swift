import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers

/// `imgfs thumbnails --desktop MOUNT [LIST...]`: writes the thumbnails of lists' entries into the user's thumbnail
/// cache (``DesktopThumbnailWriter``), so that file managers show them without reading the originals.
///
/// Exit status: 0 when every entry has its thumbnails (or a failure marker for one that cannot be thumbnailed, or
/// nothing for an entry whose image failed), 1 when the cache could not be written, 2 on a usage error.
struct ThumbnailsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnails",
        abstract: "Write the thumbnails of lists' entries into your desktop's thumbnail cache.",
        discussion: """
            With --desktop, each entry of the lists named (every list of the mount when none is) gets the \
            freedesktop.org thumbnails normal/ (128 px) and large/ (256 px) in $XDG_CACHE_HOME/thumbnails (else \
            ~/.cache/thumbnails), named by the MD5 of the entry's file:// URI as GLib builds it, with Thumb::URI, \
            Thumb::MTime and Thumb::Size of the entry: Nautilus, pcmanfm, Thunar and every GIO program then show \
            them without reading the originals. Each thumbnail is made once by the mount (from the list's \
            .sh_thumbnails/), which fetches the original if it is not cached. An entry whose thumbnail cannot be \
            made gets a failure marker (fail/gnome-thumbnail-factory/), so file managers do not try again; an entry \
            whose image failed does not exist and gets nothing. Prints one line per list.
            """
    )

    @Flag(help: "Write into the user's thumbnail cache ($XDG_CACHE_HOME/thumbnails); required.")
    var desktop = false

    @Argument(help: "The mount point of a running imgfs mount.")
    var mountPoint: String

    @Argument(help: "The lists whose entries are thumbnailed (default: every list of the mount).")
    var lists: [String] = []

    @Option(help: "How many entries to thumbnail at once.")
    var concurrency = 8

    static let maximumConcurrency = 256

    func run() throws {
        guard desktop else { throw usageError("say where to write the thumbnails: --desktop (your thumbnail cache)") }
        guard (1...Self.maximumConcurrency).contains(concurrency) else {
            throw usageError("--concurrency must be from 1 to \(Self.maximumConcurrency)")
        }
        let mount = URL(fileURLWithPath: mountPoint).standardizedFileURL.resolvingSymlinksInPath().path
        guard MountPoint.isMounted(mount) || FileManager.default.fileExists(atPath: "\(mount)/.imgfs/stats.json")
        else { throw usageError("\(mount) is not an imgfs mount") }
        let names: [String]
        do {
            names =
                lists.isEmpty
                ? try FileManager.default.contentsOfDirectory(atPath: "\(mount)/lists").sorted() : lists
        } catch {
            throw usageError("cannot list the lists of \(mount): \(error.localizedDescription)")
        }
        let writer = DesktopThumbnailWriter(mount: mount, cache: DesktopThumbnailCache.userCache())
        var failedWrites = false
        for list in names {
            let entries: [String]
            do {
                entries = try FileManager.default.contentsOfDirectory(atPath: "\(mount)/lists/\(list)")
                    .filter { !$0.hasPrefix(".") }.sorted()
            } catch {
                FileHandle.standardError.write(Data("imgfs thumbnails: no list \(list) in \(mount)\n".utf8))
                failedWrites = true
                continue
            }
            let outcomes = Self.run(entries, concurrency: concurrency) { writer.thumbnail(list: list, entry: $0) }
            var written = 0, current = 0, failed = 0, missing = 0
            for (entry, outcome) in zip(entries, outcomes) {
                switch outcome {
                case .written: written += 1
                case .current: current += 1
                case .missing: missing += 1
                case .failed(let reason):
                    failed += 1
                    FileHandle.standardError.write(Data("imgfs thumbnails: \(list)/\(entry): \(reason)\n".utf8))
                case .error(let reason):
                    failedWrites = true
                    FileHandle.standardError.write(Data("imgfs thumbnails: \(list)/\(entry): \(reason)\n".utf8))
                }
            }
            print(
                "list \(list): \(entries.count) entries, \(written) thumbnailed, \(current) already current,"
                    + " \(failed) failed (marked), \(missing) missing (imgfs why)")
        }
        print("thumbnails in \(writer.cache.directory.path)")
        if failedWrites { throw ExitCode.failure }
    }

    /// `work` of each of `items`, `concurrency` at once, in the items' order.
    static func run<Outcome: Sendable>(
        _ items: [String], concurrency: Int, _ work: @escaping @Sendable (String) -> Outcome
    ) -> [Outcome] {
        let results = Locked<[Int: Outcome]>([:])
        let pool = WorkerPool(name: "imgfs-thumbnails", threads: min(concurrency, max(1, items.count)))
        let group = DispatchGroup()
        for (index, item) in items.enumerated() {
            group.enter()
            pool.submit {
                let outcome = work(item)
                results.withLock { $0[index] = outcome }
                group.leave()
            }
        }
        group.wait()
        pool.stop()
        return results.withLock { results in items.indices.map { results[$0]! } }
    }

    private func usageError(_ message: String) -> ExitCode {
        FileHandle.standardError.write(Data("imgfs thumbnails: \(message)\n".utf8))
        return ExitCode(2)
    }
}
