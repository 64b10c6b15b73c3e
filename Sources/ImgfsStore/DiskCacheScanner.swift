import Foundation
import ImgfsModel
import ImgfsWorkers
import Logging

/// Builds the index at startup from the names and statuses of the files, without reading bodies or records (except
/// the record of a key left with two data files by a crash during a replacement), and removes what a crash or an
/// interruption left: temporary files, data files without a record, records without a data file, misplaced files,
/// and the older files of a key left with two complete entries (an entry file and another entry).
///
/// When another live ``DiskCache`` shares the directory (`exclusive` false), only leftovers older than a minute are
/// removed, so its writes in progress are not disturbed.
struct DiskCacheScanner {
    let layout: DiskCacheLayout
    let exclusive: Bool
    let now: Date
    let logger: Logger

    /// The entries found, least recently used first, and the number of leftover files removed.
    struct Result {
        var entries: [DiskCacheEntry] = []
        var removedFiles = 0
    }

    /// A data file or an entry file.
    private struct DataFile {
        var checksum: UInt32
        var size: Int
        var modified: Date
        /// When it was last renamed (or touched): of two complete entries for one key, the later one is kept.
        var changed: Date
        /// An entry file (the body and its record).
        var single = false
    }

    // MARK: - Scanning

    func scan() throws -> Result {
        var subdirectories: [String] = []
        try DiskCacheIO.forEachName(in: layout.root) { name, length, _ in
            guard DiskCacheLayout.isSubdirectoryName(name, length: length) else { return }
            subdirectories.append(String(decoding: UnsafeBufferPointer(start: name, count: length), as: UTF8.self))
        }
        var result = Result()
        for part in scanInParallel(subdirectories.sorted()) {
            result.entries += part.entries
            result.removedFiles += part.removedFiles
        }
        // Sorting small (time, position) pairs rather than the entries themselves is much faster in debug builds.
        let order = result.entries.indices
            .map { (time: result.entries[$0].lastAccess.timeIntervalSinceReferenceDate, position: $0) }
            .sorted { $0.time < $1.time }
        result.entries = order.map { result.entries[$0.position] }
        return result
    }

    /// Scans the subdirectories on several threads at once: after the page cache was dropped, listing and reading
    /// file statuses waits for the disk, and a disk serves several reads at a time much faster than one after another.
    private func scanInParallel(_ subdirectories: [String]) -> [Result] {
        let pool = WorkerPool(name: "imgfs-scan", threads: min(Self.threads, subdirectories.count))
        defer { pool.stop() }
        let parts = Locked<[Result]>([])
        for subdirectory in subdirectories {
            pool.submit { [self] in
                var part = Result()
                do {
                    try scan(subdirectory, into: &part)
                } catch {
                    logger.warning(
                        "disk cache: skipping unreadable \(layout.subdirectory(named: subdirectory)): \(error)")
                }
                parts.withLock { [part] in $0.append(part) }
            }
        }
        pool.drain()
        return parts.withLock { $0 }
    }

    /// How many subdirectories are scanned at once.
    static let threads = 16

    private func scan(_ subdirectory: String, into result: inout Result) throws {
        let path = layout.subdirectory(named: subdirectory)
        let firstByte = UInt8(subdirectory, radix: 16)
        var metas = Set<DiskCacheKey>()
        var data: [DiskCacheKey: DataFile] = [:]
        var extraData: [DiskCacheKey: [DataFile]] = [:]
        var entryFiles: [DiskCacheKey: [DataFile]] = [:]
        var leftovers: [String] = []
        try DiskCacheIO.forEachName(in: path) { name, length, directoryFD in
            let text = { String(decoding: UnsafeBufferPointer(start: name, count: length), as: UTF8.self) }
            let status = {
                try name.withMemoryRebound(to: CChar.self, capacity: length + 1) {
                    try DiskCacheIO.status(of: $0, in: directoryFD, path: path)
                }
            }
            let parsed = DiskCacheLayout.parse(name, length: length)
            switch parsed {
            case .meta(let key) where key.firstByte != firstByte, .data(let key, _) where key.firstByte != firstByte,
                .entry(let key, _, _) where key.firstByte != firstByte:
                leftovers.append(text())
            case .meta(let key):
                metas.insert(key)
            case .data(let key, let checksum):
                let status = try status()
                let file = DataFile(
                    checksum: checksum, size: Int(status.st_size), modified: status.modificationDate,
                    changed: status.changeDate)
                if data[key] == nil { data[key] = file } else { extraData[key, default: []].append(file) }
            case .entry(let key, let checksum, let size):
                let status = try status()
                guard Int(status.st_size) > size else { return leftovers.append(text()) }  // not even the whole body
                entryFiles[key, default: []].append(
                    DataFile(
                        checksum: checksum, size: size, modified: status.modificationDate,
                        changed: status.changeDate, single: true))
            case .temporary:
                leftovers.append(text())
            case .other:
                break
            }
        }
        for (key, file) in data {
            var files = [file] + (extraData[key] ?? [])
            guard metas.remove(key) != nil else {
                for file in files { leftovers.append(DiskCacheLayout.dataName(key, checksum: file.checksum)) }
                continue
            }
            if files.count > 1 { files = resolve(key, files, leftovers: &leftovers) }
            entryFiles[key, default: []] += files
        }
        for (key, candidates) in entryFiles {
            guard let current = candidates.max(by: { $0.changed < $1.changed }) else { continue }
            for other in candidates
            where other.single != current.single || other.checksum != current.checksum || other.size != current.size {
                leftovers += DiskCacheLayout.names(
                    key, checksum: other.checksum, size: other.size, singleFile: other.single)
            }
            result.entries.append(
                DiskCacheEntry(
                    key: key, size: current.size, checksum: current.checksum,
                    lastAccess: current.modified, persistedAccess: current.modified, singleFile: current.single))
        }
        leftovers += metas.map(DiskCacheLayout.metaName)
        for name in leftovers where removeLeftover(path + "/" + name) { result.removedFiles += 1 }
    }

    // MARK: - Leftovers

    /// For a key with several data files (a replacement interrupted after its new data file was committed), reads
    /// the record to keep the data file it names; the others become leftovers. An unreadable record keeps none.
    private func resolve(_ key: DiskCacheKey, _ files: [DataFile], leftovers: inout [String]) -> [DataFile] {
        let named = (try? DiskCacheIO.readSmallFile(layout.metaPath(for: key)))
            .flatMap { try? CacheRecordParser.decode($0) }
            .map(\.checksum)
        let kept = files.filter { $0.checksum == named }.prefix(1)
        for file in files where file.checksum != kept.first?.checksum {
            leftovers.append(DiskCacheLayout.dataName(key, checksum: file.checksum))
        }
        if kept.isEmpty { leftovers.append(DiskCacheLayout.metaName(key)) }
        return Array(kept)
    }

    /// Removes a leftover file: at once when this cache is the directory's only user, else only when older than a
    /// minute. Returns whether it was removed.
    private func removeLeftover(_ path: String) -> Bool {
        do {
            if !exclusive {
                let fd = try DiskCacheIO.open(path, O_RDONLY)
                let modified = (try? DiskCacheIO.fileStatus(fd, path: path))?.modificationDate ?? now
                try? DiskCacheIO.close(fd, path: path)
                guard now.timeIntervalSince(modified) > 60 else { return false }
            }
            return try DiskCacheIO.unlink(path)
        } catch {
            logger.warning("disk cache: could not remove leftover \(path): \(error)")
            return false
        }
    }
}
