import Foundation
import ImgfsModel
import ImgfsPipeline

// MARK: - Directories and generated files

extension ImageFilesystem {
    /// Takes a snapshot of directory `inode` for paging through with ``readDirectory(_:from:limit:replySize:)``;
    /// returns its handle. Directories that name cached or listed URLs are listed for the owner and root only.
    public func openDirectory(_ inode: UInt64, caller: Caller) -> Result<UInt64, FilesystemError> {
        guard let node = inodes.node(inode) else { return .failure(.stale) }
        if let refusal = checkListing(node, by: caller) { return .failure(refusal) }
        let leading = [
            DirectoryEntry(name: ".", inode: inode, kind: .directory),
            DirectoryEntry(name: "..", inode: InodeTable.rootInode, kind: .directory)
        ]
        let listing: DirectoryListing
        switch node {
        case .root:
            listing = .entries(
                leading + [
                    DirectoryEntry(name: ImagePath.imagesDirectory, inode: InodeTable.imagesInode, kind: .directory),
                    DirectoryEntry(name: Self.controlDirectory, inode: InodeTable.controlInode, kind: .directory)
                ] + thumbnailRootEntry() + browseDirectories)
        case .control:
            listing = .entries(
                leading + GeneratedFile.allCases.map { DirectoryEntry(name: $0.rawValue, inode: $0.inode, kind: .file) }
            )
        case .images:
            listing = .images(leading: leading, keys: repository.tiers.keys())
        case .chunkRoot, .chunkPrefix:
            listing = .entries(leading)
        case .thumbnail(let thumbnails):
            guard let thumbnails = thumbnailListing(thumbnails, leading: leading) else {
                return .failure(.notADirectory)
            }
            listing = thumbnails
        case .lists, .list, .hosts, .host:
            listing = listingInLists(node, leading: leading)
        case .desktop(let desktop):
            guard let desktop = desktopListing(desktop, leading: leading) else { return .failure(.notADirectory) }
            listing = desktop
        case .image, .generated, .listIndex:
            return .failure(.notADirectory)
        }
        let handle = listings.withLock { listings in
            defer { listings.next += 1 }
            listings.open[listings.next] = listing
            return listings.next
        }
        listed.opened(inode, handle: handle)
        return .success(handle)
    }

    /// Entries of an open listing from position `offset` on, each with the position after it (what the kernel passes
    /// back to continue): up to `limit`, or with `replySize`, as many as a reply of that many bytes holds
    /// (``DirectoryPage``).
    public func readDirectory(
        _ handle: UInt64, from offset: Int, limit: Int = 256, replySize: Int? = nil
    ) -> [(entry: DirectoryEntry, next: Int)] {
        guard let listing = listings.withLock({ $0.open[handle] }), offset < listing.count, offset >= 0 else {
            return []
        }
        var page = DirectoryPage(limit: limit, replySize: replySize)
        switch listing {
        case .entries(let entries):
            for index in offset..<entries.count {
                guard page.add(entries[index], next: index + 1) else { break }
            }
        case .images(let leading, let keys):
            for index in offset..<max(offset, leading.count) {
                guard page.add(leading[index], next: index + 1) else { break }
            }
            for index in max(0, offset - leading.count)..<keys.count {
                guard !page.isFull else { break }
                // An entry evicted since the snapshot is skipped; positions stay those of the snapshot.
                guard let url = repository.tiers.url(forKey: keys[index]) else { continue }
                let inode = inodes.existingInode(.image(url)) ?? Self.pseudoInode(keys[index])
                let entry = DirectoryEntry(name: listedName(url), inode: inode, kind: .file)
                guard page.add(entry, next: leading.count + index + 1) else { break }
            }
        case .list(let leading, let list):
            for index in offset..<max(offset, leading.count) {
                guard page.add(leading[index], next: index + 1) else { break }
            }
            for index in max(0, offset - leading.count)..<list.entries.count {
                guard !page.isFull else { break }
                // No URL is parsed to list (d_ino is informational: a number derived from the entry's name).
                let (name, hash) = list.nameAndHash(at: index)
                let entry = DirectoryEntry(name: name, inode: hash | 1 << 63, kind: .file)
                guard page.add(entry, next: leading.count + index + 1) else { break }
            }
        }
        return page.entries
    }

    /// Drops an open listing.
    public func closeDirectory(_ handle: UInt64) {
        _ = listings.withLock { $0.open.removeValue(forKey: handle) }
        listed.closed(handle)
    }

    /// The content of a generated file now.
    func content(of file: GeneratedFile) -> [UInt8] {
        switch file {
        case .statistics: statisticsJSON()
        case .metrics:
            Array(
                (PrometheusText.render(
                    repository.statistics(), variants: variants?.statistics(),
                    uptime: Date().timeIntervalSince(startTime))
                    + browseMetrics()).utf8)
        }
    }

    /// `.imgfs/stats.json`: the caches' and transfers' counters.
    func statisticsJSON() -> [UInt8] {
        struct Document: Encodable {
            let pid: Int32
            let uptimeSeconds: Int
            let knownInodes: Int
            let lookups: Int
            let listedWithAttributes: Int
            let placeholdersServed: Int
            let repository: RepositoryStatistics
            let lists: [ReadAhead.Named]?
            let warming: [ListWarmer.Named]?
            let hosts: [HostDirectories.Named]?
            let variants: VariantCounters?
            let reload: ReloadStatus.Snapshot?
        }
        let document = Document(
            pid: ProcessInfo.processInfo.processIdentifier,
            uptimeSeconds: Int(Date().timeIntervalSince(startTime)), knownInodes: inodes.count,
            lookups: lookupCount.load(ordering: .relaxed),
            listedWithAttributes: listedWithAttributes.load(ordering: .relaxed),
            placeholdersServed: placeholder?.served ?? 0, repository: repository.statistics(),
            lists: lists?.readAhead.counters(), warming: lists?.warmer?.counters(), hosts: lists?.hosts.statistics(),
            variants: variants?.statistics(), reload: reloadStatus?.snapshot())
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return Array((try? encoder.encode(document)) ?? Data("{}".utf8)) + [0x0a]
    }

    /// A stable inode number for listings of images the kernel has not looked up (readdir's d_ino is informational).
    static func pseudoInode(_ key: String) -> UInt64 {
        UInt64(key.prefix(15), radix: 16).map { $0 | 1 << 63 } ?? 1 << 63
    }
}
