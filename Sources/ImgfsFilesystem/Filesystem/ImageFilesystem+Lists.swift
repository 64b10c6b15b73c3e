import Foundation
import ImgfsModel

// MARK: - `lists/`, `hosts/` and the directories under them

extension ImageFilesystem {
    static let listsDirectory = "lists"
    static let hostsDirectory = "hosts"

    /// The entries of `lists/` and `hosts/` in the root, when the mount has them.
    var browseDirectories: [DirectoryEntry] {
        guard lists != nil else { return [] }
        return [
            DirectoryEntry(name: Self.listsDirectory, inode: InodeTable.listsInode, kind: .directory),
            DirectoryEntry(name: Self.hostsDirectory, inode: InodeTable.hostsInode, kind: .directory)
        ]
    }

    /// `user.imgfs.list_store` on `lists/`: the directory `imgfs list` writes lists to.
    func listsAttributes() -> [(name: String, value: String)] {
        lists.map { [(Self.attributePrefix + "list_store", $0.store.directory.path)] } ?? []
    }

    /// The per-list and per-host counters in the Prometheus text format (appended to `.imgfs/metrics`).
    func browseMetrics() -> String {
        guard let lists else { return "" }
        func label(_ text: String) -> String {
            text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n")
        }
        var lines: [String] = []
        for named in lists.readAhead.counters() {
            let c = named.counters, l = "list=\"\(label(named.name))\""
            lines += [
                "imgfs_list_opens_total{\(l)} \(c.opens)", "imgfs_list_hits_total{\(l)} \(c.hits)",
                "imgfs_list_misses_total{\(l)} \(c.misses)", "imgfs_list_bytes_total{\(l)} \(c.bytes)",
                "imgfs_list_read_ahead_started_total{\(l)} \(c.started)",
                "imgfs_list_read_ahead_used_total{\(l)} \(c.used)",
                "imgfs_list_read_ahead_wasted_total{\(l)} \(c.wasted)",
                "imgfs_list_read_ahead_pending{\(l)} \(c.pending)"
            ]
        }
        for named in lists.hosts.statistics() {
            let c = named.counters, l = "host=\"\(label(named.host))\""
            lines += [
                "imgfs_host_opens_total{\(l)} \(c.opens)", "imgfs_host_hits_total{\(l)} \(c.hits)",
                "imgfs_host_misses_total{\(l)} \(c.misses)", "imgfs_host_bytes_total{\(l)} \(c.bytes)"
            ]
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// Seconds the kernel may keep a name found under `lists/` or `hosts/`: lists change and are removed, and the host
    /// view follows the caches.
    static let browseEntryTimeout = 1.0

    /// `reply`, with the entry timeout of names under `lists/` and `hosts/` when `directory` is one of them; in a list
    /// or a host directory, a failed image is a name that does not exist (``FilesystemError/asListedEntry``).
    func browseReply(in directory: Node, _ reply: @escaping EntryReply) -> EntryReply {
        switch directory {
        case .lists, .list, .hosts, .host, .desktop:
            let listed = directory != .lists && directory != .hosts
            return { result in
                reply(
                    result.map { entry in
                        var entry = entry
                        entry.entryTimeout = min(entry.entryTimeout, Self.browseEntryTimeout)
                        return entry
                    }.mapError { listed ? $0.asListedEntry : $0 })
            }
        default:
            return reply
        }
    }

    /// A readdir inode number for a name the kernel has not looked up (d_ino is informational).
    static func nameInode(_ name: String) -> UInt64 {
        UInt64(truncatingIfNeeded: name.hashValue) | 1 << 63
    }

    /// The node `name` stands for in `lists/` or in a list's directory.
    func resolveInLists(_ name: [UInt8], in directory: Node) -> Result<Node, FilesystemError> {
        guard let lists else { return .failure(.notFound) }
        let text = String(decoding: name, as: UTF8.self)
        switch directory {
        case .lists:
            guard lists.store.list(text, recheck: true) != nil else { return .failure(.notFound) }
            lists.warmer?.listLookedUp(text)
            return .success(.list(text))
        case .list(let list):
            if text == ListIndex.fileName { return .success(.listIndex(list)) }
            if let node = repositoryNode(name, in: .list(list)) { return .success(node) }
            return lists.entry(text, inList: list, rules: repository.rules.current).map { .success(.image($0)) }
                ?? .failure(.notFound)
        case .hosts:
            return lists.hosts.hosts()[text] == nil && lists.hosts.hosts(rebuild: true)[text] == nil
                ? .failure(.notFound) : .success(.host(text))
        case .host(let host):
            if let node = repositoryNode(name, in: .host(host)) { return .success(node) }
            let url = lists.hosts.hosts()[host]?[text] ?? lists.hosts.hosts(rebuild: true)[host]?[text]
            return url.map { .success(.image($0)) } ?? .failure(.notFound)
        default:
            return .failure(.notFound)
        }
    }

    /// The listing of `lists/` or of a list's directory: names only, never the network.
    func listingInLists(_ directory: Node, leading: [DirectoryEntry]) -> DirectoryListing {
        guard let lists else { return .entries(leading) }
        switch directory {
        case .lists:
            return .entries(
                leading
                    + lists.store.names().map { name in
                        let inode = inodes.existingInode(.list(name)) ?? Self.nameInode(name)
                        return DirectoryEntry(name: name, inode: inode, kind: .directory)
                    })
        case .list(let name):
            // A snapshot of the list, named a page at a time as it is read.
            guard let list = lists.store.list(name, recheck: true) else { return .entries(leading) }
            return .list(leading: leading, list: list)
        case .hosts:
            return .entries(
                leading
                    + lists.hosts.hosts(rebuild: true).keys.sorted().map { host in
                        let inode = inodes.existingInode(.host(host)) ?? Self.nameInode(host)
                        return DirectoryEntry(name: host, inode: inode, kind: .directory)
                    })
        case .host(let host):
            let images = lists.hosts.hosts(rebuild: true)[host] ?? [:]
            return .entries(
                leading
                    + images.keys.sorted().map { name in
                        let url = images[name]!
                        let inode = inodes.existingInode(.image(url)) ?? Self.pseudoInode(url.cacheKey)
                        return DirectoryEntry(name: name, inode: inode, kind: .file)
                    })
        default:
            return .entries(leading)
        }
    }

    /// An image was opened: when it was looked up in a list, its entry's thumbnails go to the user's cache (decided
    /// on the feeder's thread).
    func desktopEntryOpened(_ url: ImageURL) {
        guard let feeder = desktopFeeder.withLock({ $0 }), let lists else { return }
        feeder.submit {
            guard let (name, index) = lists.positions.withLock({ $0[url] }), let list = lists.store.list(name),
                list.entries.indices.contains(index), list.entries[index].urlText == url.string
            else { return }
            feeder.opened(list: name, entry: list.entries[index].name, url: url)
        }
    }
}
