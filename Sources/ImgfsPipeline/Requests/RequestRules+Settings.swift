import ImgfsModel

// MARK: - Per-host settings: what a policy rule overrides of the mount's settings

extension RequestRules {
    /// `base` with the expiry and cache-control of `host`'s rule.
    public func expiry(for host: String, default base: ExpiryPolicy) -> ExpiryPolicy {
        guard let rule = rule(for: host) else { return base }
        var policy = base
        policy.lifetime = rule.expire ?? base.lifetime
        policy.honorsCacheControl = rule.cacheControl ?? base.honorsCacheControl
        return policy
    }

    /// `base` with the max size of `host`'s rule.
    public func limits(for host: String, default base: Download.Limits) -> Download.Limits {
        guard let maxSize = rule(for: host)?.maxSize else { return base }
        var limits = base
        limits.maxSize = maxSize
        return limits
    }

    /// Whether the disk copy of `url` (its text) is kept however long expired.
    public func keepsOffline(url: String) -> Bool {
        guard !hostRules.rules.isEmpty, let url = try? ImageURL(url) else { return false }
        return rule(for: url.host)?.keepOffline == true
    }

    /// The transfers per host of the rule for `host`, if it sets one.
    public func transfersPerHost(host: String) -> Int? {
        rule(for: host)?.transfersPerHost
    }
}
