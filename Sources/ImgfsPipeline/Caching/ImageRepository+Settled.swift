import Foundation
import ImgfsModel

// MARK: - What a lookup would answer from the caches alone

extension ImageRepository {
    /// The metadata a lookup of `url` (``prepare(_:interest:priority:start:continuesProbe:glance:whenKnown:)``) would
    /// answer with at once from a cached copy, without starting, joining or revalidating anything: the copy is fresh
    /// (or the mount is `cache-only`), neither its host nor the address it came from is refused, no transfer of it is
    /// under way and no reload is due. Nil in every other case (not cached, expired, in flight, refused), where only a
    /// lookup can tell. Counts nothing, starts nothing, remembers nothing: a directory listing asks it for every
    /// entry it lists.
    public func settledMetadata(_ url: ImageURL) -> ImageMetadata? {
        resolver.settledMetadata(url)
    }
}

extension SourceResolver {
    /// ``ImageRepository/settledMetadata(_:)``: what ``step(_:refresh:interest:priority:start:)`` with `refresh` would
    /// answer with a cached copy and nothing else, decided by the same rules, without changing any state.
    func settledMetadata(_ url: ImageURL) -> ImageMetadata? {
        let key = url.cacheKey, rules = configuration.rules.current
        guard configuration.addressPolicy.refusal(cachedHost: url.host) == nil,
            rules.profile(for: url.host).refusal == nil,
            let cached = tiers.source(key, counting: false), cached.metadata != nil,
            configuration.addressPolicy.refusal(cachedFrom: cached.remoteAddress) == nil
        else { return nil }
        if case .download = cached { return nil }
        return state.withLock { state -> ImageMetadata? in
            if state.inFlight[key] != nil { return nil }
            let (reload, fresh) = verdict(url, rules, cached: cached, refresh: true, state)
            return !reload && fresh ? cached.metadata : nil
        }
    }
}
