/// The request rules in force in this process: set at mount, replaced when the policy file is reloaded.
///
/// Guarantees: readers see either the old or the new rules, never a mixture; a URL's cache key is computed once, when
/// its ``ImageURL`` is made, so a reload changes the keys of URLs named afterwards only.
public enum ActivePolicy {
    private static let current = Locked(HostRules())

    /// The rules now.
    public static var rules: HostRules { current.withLock { $0 } }

    /// Replaces the rules.
    public static func replace(with rules: HostRules) {
        current.withLock { $0 = rules }
    }

    /// What a request to `host` carries now.
    public static func profile(for host: String) -> RequestProfile {
        current.withLock { $0.profile(for: host) }
    }

    /// The text `resource` (of a URL of `host`) is cached under.
    static func cacheKeyText(for resource: String, host: String) -> String {
        current.withLock { $0.cacheKeyRules(for: host) }.keyText(for: resource)
    }
}
