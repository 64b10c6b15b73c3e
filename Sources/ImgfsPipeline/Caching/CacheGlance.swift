import ImgfsModel

/// What a lookup or an open found when its URL was resolved, before it waited for anything: whether a cache held the
/// image, and its size when known. The list and host counters take it from that one resolution, so the filesystem
/// need not look into the caches itself first.
///
/// Guarantees: it describes the source the resolution chose (a cached copy being revalidated counts as cached, with
/// its size; a transfer under way as not cached, with its size once its headers told it).
public struct CacheGlance: Sendable {
    /// A cache (memory or disk) held the image.
    public var cached: Bool
    /// The image's size, when known now.
    public var size: Int?
}

extension SourceResolver.Resolution {
    /// What this resolution found, for ``CacheGlance``.
    var glance: CacheGlance {
        switch self {
        case .ready(.failure): CacheGlance(cached: false, size: nil)
        case .ready(.success(.download(let download))): CacheGlance(cached: false, size: download.currentMetadata?.size)
        case .ready(.success(let source)): CacheGlance(cached: true, size: source.metadata?.size)
        case .revalidating(_, let fallback): CacheGlance(cached: true, size: fallback.metadata?.size)
        }
    }
}
