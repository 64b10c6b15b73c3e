/// The request rules in force at one moment: the command line's defaults and the policy file's rules
/// (``HostRules``), with the answers every lookup and open asks for computed once.
///
/// Guarantees: immutable, so a request made under a snapshot keeps its answers however often the rules are replaced
/// afterwards (``RequestRulesHolder``); without policy rules (and without cache-key rules, and without credentials)
/// the per-request questions are answered from precomputed values, without a lookup by host and without a lock.
public final class RequestRules: CacheKeying, Equatable {
    /// No rules at all: imgfs's own headers only, every host allowed, no query parameter dropped from keys (for code
    /// that mounts nothing; named so as not to be mistaken for `Optional.none`).
    public static let empty = RequestRules(HostRules())

    /// The rules this snapshot was made from.
    public let hostRules: HostRules
    /// What a request to a host no policy rule matches carries: the command line's settings.
    private let defaultProfile: RequestProfile
    /// Whether any policy rule is in force (else no host has settings of its own).
    private let hasHostRules: Bool
    /// Whether any query parameter is dropped from cache keys.
    private let dropsQuery: Bool
    /// The distinct credential scopes of the rules (the command line's and each policy rule's), sorted; empty when no
    /// request carries credentials.
    public let credentialScopes: [String]

    /// The rules `rules` give, with what every request needs worked out once.
    public init(_ rules: HostRules) {
        hostRules = rules
        defaultProfile = HostRules(defaults: rules.defaults).profile(for: "")
        hasHostRules = !rules.rules.isEmpty
        dropsQuery = !rules.defaults.dropQuery.isEmpty || rules.rules.contains { !$0.dropQuery.isEmpty }
        let profiles = [rules.profile(for: "")] + rules.rules.map { rules.profile(forRule: $0) }
        credentialScopes = Array(Set(profiles.compactMap(\.credentialScope))).sorted()
    }

    /// The policy rule for `host`, if one matches (nil at once when there are none).
    package func rule(for host: String) -> HostRule? {
        hasHostRules ? hostRules.rule(for: host) : nil
    }

    /// What a request to `host` carries.
    public func profile(for host: String) -> RequestProfile {
        hasHostRules ? hostRules.profile(for: host) : defaultProfile
    }

    /// The credential scope of requests to `host` (``RequestProfile/credentialScope``), nil when they carry none:
    /// what keeps an image fetched with credentials apart from one fetched with others or none.
    public func credentialScope(for host: String) -> String? {
        credentialScopes.isEmpty ? nil : profile(for: host).credentialScope
    }

    /// The text `resource` (of a URL of `host`) is cached under.
    public func cacheKeyText(for resource: String, host: String) -> String {
        dropsQuery ? hostRules.cacheKeyRules(for: host).keyText(for: resource) : resource
    }

    /// Snapshots of equal rules answer alike.
    public static func == (lhs: RequestRules, rhs: RequestRules) -> Bool {
        lhs === rhs || lhs.hostRules == rhs.hostRules
    }
}
