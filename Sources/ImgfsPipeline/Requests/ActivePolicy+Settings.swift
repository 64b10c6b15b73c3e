import ImgfsModel

// MARK: - Per-host settings: what a policy rule overrides of the mount's settings

extension ActivePolicy {
    /// `base` with the expiry and cache-control of `host`'s rule.
    public static func expiry(for host: String, default base: ExpiryPolicy) -> ExpiryPolicy {
        guard let rule = rule(for: host) else { return base }
        var policy = base
        policy.lifetime = rule.expire ?? base.lifetime
        policy.honorsCacheControl = rule.cacheControl ?? base.honorsCacheControl
        return policy
    }

    /// `base` with the max size of `host`'s rule.
    public static func limits(for host: String, default base: Download.Limits) -> Download.Limits {
        guard let maxSize = rule(for: host)?.maxSize else { return base }
        var limits = base
        limits.maxSize = maxSize
        return limits
    }

    /// Whether the disk copy of `url` (its text) is kept however long expired.
    public static func keepsOffline(url: String) -> Bool {
        guard let url = try? ImageURL(url) else { return false }
        return rule(for: url.host)?.keepOffline == true
    }

    /// The transfers per host of the rule for the host of `hostKey` (`scheme://host:port`), if it sets one.
    public static func transfersPerHost(hostKey: String) -> Int? {
        guard hasHostRules.load(ordering: .acquiring), let url = try? ImageURL(hostKey + "/") else { return nil }
        return rule(for: url.host)?.transfersPerHost
    }
}
