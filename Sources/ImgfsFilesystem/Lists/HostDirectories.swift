import Foundation
import ImgfsModel
import ImgfsPipeline

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
