import Synchronization

/// The request rules in force in this process: set at mount, replaced when the policy file is reloaded.
///
/// Guarantees: readers see either the old or the new rules, never a mixture; a URL's cache key is computed once, when
/// its ``ImageURL`` is made, so a reload changes the keys of URLs named afterwards only. Without policy rules (and
/// without cache-key rules) the per-request questions are answered without taking the lock: every lookup and open
/// asks them, from every FUSE thread at once.
public enum ActivePolicy {
    private static let current = Locked(HostRules())
    /// What a request to a host no policy rule matches carries: the command line's settings, computed once per
    /// ``replace(with:)`` instead of once per transfer.
    private static let defaultProfile = Locked(HostRules().profile(for: ""))
    /// Whether any policy rule is in force (else no host has settings of its own).
    package static let hasHostRules = Atomic<Bool>(false)
    /// Whether any query parameter is dropped from cache keys.
    private static let dropsQuery = Atomic<Bool>(false)
    /// Whether any request carries credentials (a header line or a cookie file), so that cache keys get a scope.
    private static let carriesCredentials = Atomic<Bool>(false)
    /// The distinct credential scopes of the rules now (the command line's and each policy rule's).
    private static let scopes = Locked<[String]>([])

    /// The policy rule for `host`, if one matches (nil at once when there are none).
    package static func rule(for host: String) -> HostRule? {
        guard hasHostRules.load(ordering: .acquiring) else { return nil }
        return current.withLock { $0.rule(for: host) }
    }

    /// The rules now.
    public static var rules: HostRules { current.withLock { $0 } }

    /// Replaces the rules.
    public static func replace(with rules: HostRules) {
        current.withLock { $0 = rules }
        defaultProfile.withLock { $0 = HostRules(defaults: rules.defaults).profile(for: "") }
        hasHostRules.store(!rules.rules.isEmpty, ordering: .releasing)
        dropsQuery.store(
            !rules.defaults.dropQuery.isEmpty || rules.rules.contains { !$0.dropQuery.isEmpty },
            ordering: .releasing)
        let profiles = [rules.profile(for: "")] + rules.rules.map { rules.profile(forRule: $0) }
        let found = profiles.compactMap(\.credentialScope)
        scopes.withLock { $0 = Array(Set(found)).sorted() }
        carriesCredentials.store(!found.isEmpty, ordering: .releasing)
    }

    /// The credential scope of requests to `host` (``RequestProfile/credentialScope``), nil when they carry none:
    /// what keeps an image fetched with credentials apart from one fetched with others or none.
    static func credentialScope(for host: String) -> String? {
        guard carriesCredentials.load(ordering: .acquiring) else { return nil }
        return profile(for: host).credentialScope
    }

    /// Every credential scope some host has now (for looking a cache key up without knowing its host).
    public static var credentialScopes: [String] {
        guard carriesCredentials.load(ordering: .acquiring) else { return [] }
        return scopes.withLock { $0 }
    }

    /// What a request to `host` carries now.
    public static func profile(for host: String) -> RequestProfile {
        guard hasHostRules.load(ordering: .acquiring) else { return defaultProfile.withLock { $0 } }
        return current.withLock { $0.profile(for: host) }
    }

    /// The text `resource` (of a URL of `host`) is cached under.
    static func cacheKeyText(for resource: String, host: String) -> String {
        guard dropsQuery.load(ordering: .acquiring) else { return resource }
        return current.withLock { $0.cacheKeyRules(for: host) }.keyText(for: resource)
    }
}
