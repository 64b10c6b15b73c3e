import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers

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
    /// The list and position each image was last looked up at (bounded: cleared when it grows past `positionLimit`).
    let positions = Locked<[ImageURL: (list: String, index: Int)]>([:])
    static let positionLimit = 500_000
    /// Where read-ahead is decided and started: off the FUSE thread answering the open, in the order of the opens.
    private let readAheadQueue = WorkerPool(name: "imgfs-readahead")
    private let openHandles = OpenHandleCounter()
    /// What warms the lists marked for it when they are looked up (none: lists are not warmed).
    public let warmer: ListWarmer?
    /// Where what is learnt of entries is written to their lists' facts files, off the FUSE threads.
    let factsQueue = WorkerPool(name: "imgfs-facts")

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
        positions.withLock { positions in
            if positions.count >= Self.positionLimit { positions.removeAll() }
            positions[url] = (list, index)
        }
        return url
    }

    /// Installs what tells how many file handles are open on an image (a jump never calls off an open file's transfer).
    func onOpenHandles(_ count: @escaping @Sendable (ImageURL) -> Int) {
        openHandles.install(count)
    }

    /// `url` is being looked up (by any name): remembers whether it was cached, for the hit and miss counters.
    func lookedUp(_ url: ImageURL, cached: Bool) {
        hosts.lookedUp(url, cached: cached)
    }

    /// `url` is being opened: counts it for its host, and loads ahead when it was looked up in a list.
    func opened(_ url: ImageURL, cached: Bool, size: Int?) {
        let hit = hosts.opened(url, cached: cached, size: size)
        guard let (name, index) = positions.withLock({ $0[url] }) else { return }
        let bytes = size ?? 0
        readAheadQueue.submit { [self] in
            guard let list = store.list(name), list.entries.indices.contains(index),
                list.entries[index].urlText == url.string
            else { return }
            // While the list warms, a jump gives nothing up: the warm would only load it again.
            let warming = warmer?.isWarming(name) == true
            readAhead.opened(list, index: index, hit: hit, bytes: bytes) { [openHandles] in
                openHandles($0) + (warming ? 1 : 0)
            }
        }
    }
}
