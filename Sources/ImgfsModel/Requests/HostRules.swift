/// The request rules of a mount: the command line's defaults and the policy file's rules by host pattern.
///
/// Guarantees: for a host, the first policy rule whose pattern matches applies (rules are kept in file order, the
/// default rule `*` last); its settings override the command line's, and its headers are added to (or replace by name)
/// the command line's. Nothing here is sent to any host but the one the profile was computed for.
public struct HostRules: Sendable, Equatable {
    /// The command line's settings (`--header`, `--cookie-file`).
    public var defaults: HostRule
    /// The policy file's rules, first match wins.
    public var rules: [HostRule]

    /// Rules whose settings come from the first of `rules` that matches a host, then `defaults`.
    public init(defaults: HostRule = HostRule(pattern: "*"), rules: [HostRule] = []) {
        self.defaults = defaults
        self.rules = rules
    }

    /// The policy rule for `host`, if one matches.
    public func rule(for host: String) -> HostRule? {
        rules.first { $0.matches(host: host) }
    }

    /// What a request to `host` carries.
    public func profile(for host: String) -> RequestProfile {
        profile(host: host, rule: rule(for: host))
    }

    /// What a request to a host that `rule` matches carries.
    func profile(forRule rule: HostRule) -> RequestProfile {
        profile(host: rule.pattern, rule: rule)
    }

    private func profile(host: String, rule: HostRule?) -> RequestProfile {
        var profile = RequestProfile()
        for layer in [defaults, rule].compactMap({ $0 }) {
            layer.headers.forEach { profile.set(header: $0) }
            profile.userAgent = layer.userAgent ?? profile.userAgent
            profile.referer = layer.referer ?? profile.referer
            profile.cookieFile = layer.cookieFile ?? profile.cookieFile
        }
        if rule?.deny == true { profile.refusal = "\(host) is denied by the policy rule \(rule?.pattern ?? "*")" }
        return profile
    }

    /// The cache-key rules of `host`.
    public func cacheKeyRules(for host: String) -> CacheKeyRules {
        CacheKeyRules(dropped: defaults.dropQuery + (rule(for: host)?.dropQuery ?? []))
    }
}
