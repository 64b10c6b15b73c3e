import ImgfsModel

/// When the network may be used for an image that is cached (URLImage's policies).
public enum CachePolicy: String, CaseIterable, Sendable {
    /// Serve what is cached and fresh; fetch (or revalidate) otherwise. The default.
    case cacheElseLoad = "cache-else-load"
    /// Never touch the network: serve what is cached, fresh or not; anything else is ENOENT.
    case cacheOnly = "cache-only"
    /// Fetch every URL again the first time it is used after mounting, then serve that copy.
    case reload
}
