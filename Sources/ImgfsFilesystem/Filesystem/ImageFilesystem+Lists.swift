import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers

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

    /// Seconds the kernel may keep a name found under `lists/` (a list) or `hosts/`: lists change and are removed, and
    /// the host view follows the caches. The entries of a list are kept as long as names under `img/`: a list whose
    /// file changed has its name dropped in the kernel, with every entry below it, at the next lookup of its name
    /// (``resolveInLists(_:in:)``), which every path through it makes at least once a second.
    static let browseEntryTimeout = 1.0

    /// `reply`, with the entry timeout of names under `lists/` and `hosts/` when `directory` is one of them; in a list
    /// or a host directory, a failed image is a name that does not exist (``FilesystemError/asListedEntry``).
    func browseReply(in directory: Node, _ reply: @escaping EntryReply) -> EntryReply {
        switch directory {
        case .lists, .list, .hosts, .host, .desktop:
            let listed = directory != .lists && directory != .hosts
            return { result in
                reply(result.map { Self.browseEntry($0, in: directory) }.mapError { listed ? $0.asListedEntry : $0 })
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
            guard let list = lists.store.list(text, recheck: true) else {
                lists.versions.forget(text)
                return .failure(.notFound)
            }
            lists.warmer?.listLookedUp(text)
            noteVersion(list)
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

    /// `list` was found for a lookup of its name or a listing: if it replaced the version found before, the kernel is
    /// told to drop the list's name with every entry below it (after this request's answer: never while the kernel
    /// waits for it), so the next path through it looks the entries up in the new list.
    private func noteVersion(_ list: ImageList) {
        guard let lists, lists.versions.changed(list.name, to: list), entryInvalidation.isInstalled else { return }
        Self.invalidations.async { [entryInvalidation] in entryInvalidation((InodeTable.listsInode, list.name)) }
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
            noteVersion(list)
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
            guard let (list, index) = lists.position(of: url) else { return }
            feeder.opened(list: list.name, entry: list.entries[index].name, url: url)
        }
    }
}

// MARK: - ListDirectories

/// What `<mount>/lists/` shows: one directory per stored list, each entry the same image as `img/<encoded-url>`;
/// with ``HostDirectories`` (`<mount>/hosts/`), the folder views of the mount.
///
/// Guarantees: listing and looking up never touch the network; an entry looked up in a list is remembered with its
/// position, so that opening it (by whatever name) loads ahead in that list (``ReadAhead``).
public final class ListDirectories: Sendable {
    /// The lists shown.
    public let store: ListStore
    /// What loads ahead when a list's entry is opened.
    public let readAhead: ReadAhead
    /// The per-host view, `hosts/`.
    public let hosts: HostDirectories
    /// The version of each list its last lookup found.
    let versions = ListVersions()
    /// The list and position each image was last looked up at (bounded: cleared when it grows past `positionLimit`).
    let positions = Locked<[ImageURL: (list: String, index: Int)]>([:])
    static let positionLimit = 500_000
    private let openHandles = OpenHandleCounter()
    /// What warms the lists marked for it when they are looked up (none: lists are not warmed).
    public let warmer: ListWarmer?
    /// Where what is learnt of entries is written to their lists' facts files, off the FUSE threads.
    let factsQueue = WorkerPool(name: "imgfs-facts")
    /// The lists' `.index.jsonl` as last rendered.
    let renderedIndexes = RenderedListIndex()

    /// The directories of the lists in `store` and of the hosts in `hosts`, loading ahead with `readAhead`.
    public init(store: ListStore, readAhead: ReadAhead, hosts: HostDirectories, warmer: ListWarmer? = nil) {
        self.store = store
        self.warmer = warmer
        self.readAhead = readAhead
        self.hosts = hosts
    }

    /// The entry `name` of list `list`, named under `rules`, remembering its position.
    func entry(_ name: String, inList list: String, rules: RequestRules) -> ImageURL? {
        guard let images = store.list(list), let index = images.index(of: name),
            let url = images.entries[index].url(keying: rules)
        else { return nil }
        remember(url, inList: list, at: index)
        return url
    }

    /// The list and position `url` was last looked up at, when that list still holds it there.
    func position(of url: ImageURL) -> (list: ImageList, index: Int)? {
        guard let (name, index) = positions.withLock({ $0[url] }), let list = store.list(name),
            list.entries.indices.contains(index), list.entries[index].urlText == url.string
        else { return nil }
        return (list, index)
    }

    /// Remembers that `url` was looked up (or listed with its attributes) as entry `index` of list `list`.
    func remember(_ url: ImageURL, inList list: String, at index: Int) {
        positions.withLock { positions in
            if positions.count >= Self.positionLimit { positions.removeAll() }
            positions[url] = (list, index)
        }
    }

    /// Installs what tells how many file handles are open on an image (a jump never calls off an open file's transfer).
    func onOpenHandles(_ count: @escaping @Sendable (ImageURL) -> Int) {
        openHandles.install(count)
    }

    /// `url` is being looked up (by any name): remembers whether it was cached, for the hit and miss counters.
    func lookedUp(_ url: ImageURL, cached: Bool) {
        hosts.lookedUp(url, cached: cached)
    }

    /// `url` is being opened: counts it for its host; returns whether it was a hit.
    func opened(_ url: ImageURL, cached: Bool, size: Int?) -> Bool {
        hosts.opened(url, cached: cached, size: size)
    }

    /// `url` was opened (`hit`: ``opened(_:cached:size:)``'s answer): counts it for its list and loads ahead, on the
    /// calling thread, when it was looked up in a list.
    func readAhead(after url: ImageURL, hit: Bool, size: Int?) {
        guard let (list, index) = position(of: url) else { return }
        // While the list warms, a jump gives nothing up: the warm would only load it again.
        let warming = warmer?.isWarming(list.name) == true
        readAhead.opened(list, index: index, hit: hit, bytes: size ?? 0) { [openHandles] in
            openHandles($0) + (warming ? 1 : 0)
        }
    }
}

// MARK: - HostDirectories

/// What `<mount>/hosts/` shows: one directory per host of the cached images, each listing that host's cached images
/// under readable names (a read-only view of `img/`).
///
/// Guarantees: never touches the network; an entry is the same file as `img/<encoded-url>`; names are
/// `<stem>-<12 hex digits of the cache key>[.<extension>]` (stem and extension as for list entries, the extension from
/// the URL, else from the cached Content-Type), unique within a host; the view is rebuilt from the caches at most
/// every ``refreshInterval`` and whenever `hosts/` itself is listed.
public final class HostDirectories: Sendable {
    /// Per-host counters of opens.
    public struct Counters: OpenCounting, Sendable, Codable, Equatable {
        /// Opens of the host's images, by whatever name.
        public var opens = 0
        /// Opens that found the image cached (memory or disk).
        public var hits = 0
        /// Opens that did not.
        public var misses = 0
        /// The sizes of the opened images, where known at the open.
        public var bytes = 0
    }

    /// One host's counters with its name.
    public struct Named: Sendable, Codable, Equatable {
        /// The host's directory name (``HostDirectories/directoryName(_:)``).
        public let host: String
        /// The host's counters.
        public let counters: Counters
    }

    static let refreshInterval: TimeInterval = 1
    private let tiers: CacheTiers
    private let view = Locked<(built: Date, hosts: [String: [String: ImageURL]])>((.distantPast, [:]))
    private let counters = Locked<[String: Counters]>([:])
    /// Images that no cache held when they were looked up and that have not been opened since (bounded).
    private let uncached = Locked<Set<ImageURL>>([])
    static let uncachedLimit = 100_000

    /// The view of the images cached in `tiers`.
    public init(tiers: CacheTiers) {
        self.tiers = tiers
    }

    /// The directory name of `url`'s host: `host`, or `host:port` for a port other than the scheme's default.
    public static func directoryName(_ url: ImageURL) -> String {
        let standard = url.scheme == "https" ? 443 : 80
        return url.port == standard ? url.host : "\(url.host):\(url.port)"
    }

    /// The file name of cached `url` under its host.
    static func entryName(_ url: ImageURL, key: String, contentType: String?) -> String {
        let (stem, own) = EntryNamer.splitExtension(EntryNamer.lastSegment(of: url))
        let clean = EntryNamer.sanitize(stem)
        let base = (clean.isEmpty ? "" : clean + "-") + key.prefix(12)
        let fileExtension =
            own ?? ImageExtension.fromPath(of: url)
            ?? contentType.flatMap(ImageExtension.forContentType)
        return fileExtension.map { "\(base).\($0)" } ?? base
    }

    /// Every host with cached images, and their images by name.
    func hosts(rebuild: Bool = false) -> [String: [String: ImageURL]] {
        let current = view.withLock { Date().timeIntervalSince($0.built) < Self.refreshInterval ? $0.hosts : nil }
        if !rebuild, let current {
            return current
        }
        var hosts: [String: [String: ImageURL]] = [:]
        for key in tiers.keys() {
            guard let entry = tiers.lookup(key), let url = entry.url(keying: tiers.rules.current) else { continue }
            let type = entry.metadata.contentType
            hosts[Self.directoryName(url), default: [:]][Self.entryName(url, key: key, contentType: type)] = url
        }
        view.withLock { $0 = (Date(), hosts) }
        return hosts
    }

    /// `url` is being looked up; `cached` says whether a cache holds it now.
    func lookedUp(_ url: ImageURL, cached: Bool) {
        guard !cached else { return }
        uncached.withLock { set in
            if set.count >= Self.uncachedLimit { set.removeAll() }
            set.insert(url)
        }
    }

    /// `url` was opened: counts it for its host and returns whether it was a hit (a cache held it when it was looked
    /// up and holds it now); a miss waited for, or joined, a transfer.
    @discardableResult
    func opened(_ url: ImageURL, cached: Bool, size: Int?) -> Bool {
        let missedAtLookup = uncached.withLock { $0.remove(url) != nil }
        let hit = !missedAtLookup && cached
        counters.withLock { counters in
            counters[Self.directoryName(url), default: Counters()].countOpen(
                hit: hit, bytes: size ?? 0)
        }
        return hit
    }

    /// The counters of every host opened, by host.
    public func statistics() -> [Named] {
        counters.withLock { $0.map { Named(host: $0.key, counters: $0.value) } }.sorted { $0.host < $1.host }
    }
}

// MARK: - OpenCounting

/// Counters of opens (per list, per host): how many, how many found their image cached, the bytes opened.
public protocol OpenCounting {
    var opens: Int { get set }
    var hits: Int { get set }
    var misses: Int { get set }
    var bytes: Int { get set }
}

extension OpenCounting {
    /// Counts one open: a hit when its image was cached, `bytes` its size when known.
    mutating func countOpen(hit: Bool, bytes: Int) {
        opens += 1
        hits += hit ? 1 : 0
        misses += hit ? 0 : 1
        self.bytes += bytes
    }
}

// MARK: - ImageFilesystem+Facts

// MARK: - Lists' facts: stat without the network, and what is learnt of entries

extension ImageFilesystem {
    /// The entry of a list's image answered from what its list knows (``EntryFacts``), when the repository neither
    /// holds nor fetches it nor remembers its failure: a `stat` after a remount costs no request. For a lookup (no
    /// `inode`) the answer counts one kernel reference; a getattr passes the inode it asks about and counts none.
    func entryFromFacts(_ url: ImageURL, inode: UInt64? = nil) -> Entry? {
        // The list's facts first: a lookup in the position table, nothing for an image never looked up in a list.
        guard let lists, let facts = lists.facts(of: url), facts.status == .ok, let metadata = Self.metadata(facts),
            !repository.isKnown(url)
        else { return nil }
        return imageEntry(inode ?? inodes.lookUp(.image(url)), metadata)
    }

    /// The metadata a usable entry's facts stand for.
    static func metadata(_ facts: EntryFacts) -> ImageMetadata? {
        guard facts.status == .ok, let size = facts.size else { return nil }
        return ImageMetadata(
            size: size, etag: facts.etag, lastModified: facts.modified, fetchedAt: facts.modified ?? Date())
    }

    /// Records in its list's facts what is known of `url` now, off the calling thread: its size, validators and
    /// modification time, its header once its first bytes are in (again when its transfer ends, if they are not yet),
    /// or its failure. An entry whose size changed from what its list said has its attributes dropped in the kernel.
    /// `known`: the metadata just found (an open's); when the list already says all of it, nothing is queued.
    func learn(_ url: ImageURL, known: ImageMetadata? = nil) {
        guard let lists, let place = lists.place(of: url) else { return }
        if let known, let old = place.facts.facts(at: place.index, urlText: place.urlText),
            old.isCurrent(for: known)
        {
            return
        }
        lists.factsQueue.submit { [self] in record(url, again: true) }
    }

    /// `firstBytes`: the image's first bytes as they arrived in its transfer (a probe's too), when no tier holds them.
    private func record(_ url: ImageURL, again: Bool, firstBytes: [UInt8]? = nil) {
        guard let lists, let place = lists.place(of: url) else { return }
        let old = place.facts.facts(at: place.index, urlText: place.urlText)
        let report = repository.report(url)
        let new: EntryFacts
        if let error = report.error {
            switch error {
            case .cancelled, .shutDown, .notCached: return
            default: new = EntryFacts(failure: error.description)
            }
        } else if let metadata = report.metadata {
            let modified = metadata.lastModified ?? metadata.fetchedAt
            if let old, old.size == metadata.size, old.etag == metadata.etag, old.format != nil {
                // Already known; only the validators' times move.
                guard !old.isCurrent(for: metadata) else { return }
                var renewed = old
                renewed.modified = PlausibleDate.check(modified)
                place.facts.record(renewed, at: place.index, urlText: place.urlText)
                return
            }
            let header = (firstBytes ?? repository.firstBytes(of: url)?.bytes).flatMap { ImageHeader.parse($0) }
            if header == nil && again { recordLater(url) }
            new = EntryFacts(size: metadata.size, header: header, modified: modified, etag: metadata.etag)
        } else {
            if again { recordLater(url) }
            return
        }
        guard new != old else { return }
        place.facts.record(new, at: place.index, urlText: place.urlText)
        if let oldSize = old?.size, oldSize != new.size, let inode = inodes.existingInode(.image(url)) {
            invalidate(inode)
        }
    }

    /// Records `url` again once the transfer under way has its first bytes (a probe stops after them; no request is
    /// made for them), else once it has ended.
    private func recordLater(_ url: ImageURL) {
        guard let lists else { return }
        repository.arrivingFirstBytes(of: url) { [self] bytes in
            guard let bytes else {
                return repository.whenSettled(url) { lists.factsQueue.submit { self.record(url, again: false) } }
            }
            lists.factsQueue.submit { self.record(url, again: false, firstBytes: bytes) }
        }
    }

    /// `user.imgfs.{format,width,height,orientation}` of an image: from its list's facts, else from its first bytes
    /// when a tier holds them.
    func headerAttributes(_ url: ImageURL) -> [(String, String?)] {
        var facts = lists?.facts(of: url)
        if facts?.format == nil, let (metadata, bytes) = repository.firstBytes(of: url) {
            facts = EntryFacts(size: metadata.size, header: ImageHeader.parse(bytes), modified: nil, etag: nil)
        }
        guard let facts, facts.status == .ok else { return [] }
        return [
            ("format", facts.format?.rawValue), ("width", facts.width.map(String.init)),
            ("height", facts.height.map(String.init)), ("orientation", facts.orientation.map(String.init))
        ]
    }
}

// MARK: - `lists/NAME/.index.jsonl`

extension ImageFilesystem {
    /// The content of list `name`'s `.index.jsonl` now (empty when the list is gone).
    func listIndexContent(_ name: String) -> [UInt8] {
        guard let lists, let (list, facts) = lists.store.listWithFacts(name) else { return [] }
        return lists.renderedIndexes.content(list, facts: facts)
    }

    /// The size of list `name`'s `.index.jsonl` now (0 when the list is gone).
    func listIndexSize(_ name: String) -> Int {
        guard let lists, let (list, facts) = lists.store.listWithFacts(name) else { return 0 }
        return lists.renderedIndexes.size(list, facts: facts)
    }

    /// The entry of list `name`'s `.index.jsonl`: its size now, attributes not to be cached (it grows as entries are
    /// learnt).
    func listIndexEntry(_ inode: UInt64, list name: String) -> Entry {
        let attributes = Attributes(
            inode: inode, kind: .file, size: listIndexSize(name),
            permissions: Self.permissions(of: .listIndex(name)), modified: Date(), linkCount: 1)
        return Entry(attributes: attributes, entryTimeout: Self.browseEntryTimeout, attributeTimeout: 0)
    }
}

// MARK: - ListDirectories+Facts

// MARK: - What the lists know of their entries

extension ListDirectories {
    /// Where `url` was last looked up in a list: the list, the entry's position and URL text, and the list's facts.
    struct Place {
        let list: ImageList
        let index: Int
        let urlText: String
        let facts: ListFacts
    }

    /// The list entry `url` was last looked up as, when that list still holds it there.
    func place(of url: ImageURL) -> Place? {
        guard let (name, index) = positions.withLock({ $0[url] }), let (list, facts) = store.listWithFacts(name),
            let facts, list.entries.indices.contains(index), list.entries[index].urlText == url.string
        else { return nil }
        return Place(list: list, index: index, urlText: list.entries[index].urlText, facts: facts)
    }

    /// What the list that `url` was last looked up in knows of it.
    func facts(of url: ImageURL) -> EntryFacts? {
        place(of: url).flatMap { $0.facts.facts(at: $0.index, urlText: $0.urlText) }
    }
}
