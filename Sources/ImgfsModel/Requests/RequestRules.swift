import Synchronization

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

// MARK: - RequestRulesHolder

/// The request rules of one mount: set when it starts, replaced when its policy file is reloaded. Whoever makes
/// requests or names URLs for the mount holds this object (there is no process-wide one), and takes a snapshot
/// (``current``) for each request or name.
///
/// Guarantees: a reader gets either the old or the new snapshot, never a mixture; ``replace(with:)`` changes what
/// requests and names made afterwards take, never a snapshot already taken (a URL's cache key is computed once, when
/// its ``ImageURL`` is made, so a reload changes the keys of URLs named afterwards only). Until the first reload,
/// reading takes no lock (every lookup and open asks, from every FUSE thread at once); after it, one brief lock around
/// copying a reference.
public final class RequestRulesHolder: Sendable {
    /// The snapshot the mount started with.
    private let first: RequestRules
    /// Whether ``replace(with:)`` was ever called (then ``snapshot`` holds the rules now).
    private let replaced = Atomic<Bool>(false)
    private let snapshot: Locked<RequestRules>

    /// A holder whose first snapshot is made from `rules`.
    public init(_ rules: HostRules = HostRules()) {
        first = RequestRules(rules)
        snapshot = Locked(first)
    }

    /// The rules now: what a request or name made now is made under.
    public var current: RequestRules {
        guard replaced.load(ordering: .acquiring) else { return first }
        return snapshot.withLock { $0 }
    }

    /// Replaces the rules for what is made from now on.
    public func replace(with rules: HostRules) {
        let next = RequestRules(rules)
        snapshot.withLock { $0 = next }
        replaced.store(true, ordering: .releasing)
    }
}

// MARK: - HostRules

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

// MARK: - HostRule

/// What imgfs does for the URLs of one host pattern: a rule of the policy file, or the command line's defaults.
///
/// Guarantees: a value only; every field that is nil (or empty) leaves the setting of the rules below it (the command
/// line's) in force.
public struct HostRule: Sendable, Equatable {
    /// `example.com`, `*.cdn.example.com`, an IP literal, or `*` (every host): see ``AddressPolicy/allowedHosts``.
    public var pattern: String
    /// Request header lines (`Name: value`) sent to this host only.
    public var headers: [String] = []
    /// The User-Agent sent to this host.
    public var userAgent: String?
    /// The Referer sent to this host.
    public var referer: String?
    /// A Netscape-format cookie file read at the start of each transfer (curl sends only the cookies whose domain
    /// matches the host).
    public var cookieFile: String?
    /// Whether URLs of this host are refused (`false` allows explicitly; nil: not said).
    public var deny: Bool?
    /// Query parameters left out of the cache key (names or `*` globs such as `X-Amz-*`).
    public var dropQuery: [String] = []
    /// How long this host's images stay fresh (`--expire`).
    public var expire: Double?
    /// Whether Cache-Control and Expires decide freshness (`--cache-control`).
    public var cacheControl: Bool?
    /// The largest image served from this host (`--max-size`).
    public var maxSize: Int?
    /// Transfers running at once to this host (`--tune max-transfers-per-host`).
    public var transfersPerHost: Int?
    /// Whether this host's images stay on disk however long expired (only the size cap evicts them), for use offline.
    public var keepOffline: Bool?

    /// A rule for hosts matching `pattern` that sets nothing; every setting falls through to the defaults.
    public init(pattern: String) {
        self.pattern = pattern
    }

    /// Whether this rule applies to `host` (lower-case, as in ``ImageURL/host``).
    public func matches(host: String) -> Bool {
        pattern == "*" || AddressPolicy.pattern(pattern, matches: host)
    }

    /// Whether `pattern` is usable: `*` or an ``AddressPolicy/isValidHostPattern(_:)`` pattern.
    public static func isValidPattern(_ pattern: String) -> Bool {
        pattern == "*" || AddressPolicy.isValidHostPattern(pattern)
    }

    /// Whether `line` is a header line imgfs can send: `Name: value` with a token name and no line breaks.
    public static func isValidHeader(_ line: String) -> Bool {
        guard let colon = line.firstIndex(of: ":") else { return false }
        let name = line[..<colon]
        let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        return !name.isEmpty && name.allSatisfy { token.contains($0) }
            && !line.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F })
    }
}

// MARK: - RequestProfile

/// What one request to one host carries beyond imgfs's own headers, after the rules are applied.
///
/// Guarantees: a value only; ``masked`` never contains the value of any header (every header comes from `--header` or a
/// policy rule, and any of them may carry a credential: `X-Api-Key`, `Authorization`, a cookie).
public struct RequestProfile: Sendable, Equatable {
    /// Header lines (`Name: value`); a later line with the same name replaced an earlier one.
    public var headers: [String] = []
    /// The User-Agent (nil: imgfs's own).
    public var userAgent: String?
    /// The Referer (nil: none).
    public var referer: String?
    /// The Netscape cookie file to read (nil: no cookies).
    public var cookieFile: String?
    /// The reason the host is refused, if it is.
    public var refusal: String?

    /// A profile with no headers, User-Agent, Referer or cookie file of its own, and no refusal.
    public init() {}

    /// A digest of what may make the origin answer differently than to anyone (every header line, the cookie file),
    /// or nil when the request carries none: SHA-256 (hex) of a canonical form (`imgfs credentials v1`, then each
    /// header line with its name in lower case, sorted, then the cookie file's path; NUL-separated). It names the
    /// credentials without revealing them. User-Agent and Referer are not part of it.
    public var credentialScope: String? {
        guard !headers.isEmpty || cookieFile != nil else { return nil }
        let lines = headers.map { line -> String in
            let name = Self.name(of: line)
            let value = line.drop { $0 != ":" }.dropFirst().drop { $0 == " " || $0 == "\t" }
            return "\(name):\(value)"
        }.sorted()
        let parts = ["imgfs credentials v1"] + lines + ["cookie-file", cookieFile ?? ""]
        return SHA256.hex(of: Array(parts.joined(separator: "\0").utf8))
    }

    /// The header lines with their values replaced by `***`, for logs.
    public var masked: [String] { headers.map(Self.masked) }

    /// `line` with its value replaced by `***`: only the header's name is shown. A line without a colon (an invalid
    /// header) may be a value given alone, so it is shown as `***` whole.
    public static func masked(_ line: String) -> String {
        guard let colon = line.firstIndex(of: ":") else { return "***" }
        return "\(line[..<colon]): ***"
    }

    /// Adds `line`, replacing an earlier header of the same name (a User-Agent or Referer line sets that field).
    mutating func set(header line: String) {
        let name = Self.name(of: line)
        let value = String(line.drop { $0 != ":" }.dropFirst().drop { $0 == " " || $0 == "\t" })
        switch name {
        case "user-agent": userAgent = value
        case "referer": referer = value
        default: break
        }
        guard name != "user-agent", name != "referer" else { return }
        headers.removeAll { Self.name(of: $0) == name }
        headers.append(line)
    }

    private static func name(of line: String) -> String {
        String(line.prefix { $0 != ":" }).lowercased()
    }
}

// MARK: - AddressPolicy

/// Which hosts and network addresses imgfs may fetch from: `--allowed-host` patterns and `--deny-private-networks`.
///
/// Two checks, at two moments. ``allows(host:)`` runs on the URL's host before any request is made. Because a
/// host name can resolve (or be re-bound) to any address, ``allows(address:)`` must also run on the numeric address
/// each connection is actually opened to (from the HTTP client's open-socket callback); only that second check
/// makes `denyPrivateNetworks` effective. Every `allows` has a `refusal` twin that returns the reason for logs, and
/// `allows(…)` is exactly `refusal(…) == nil`. The default policy allows everything.
public struct AddressPolicy: Hashable, Sendable {
    /// Refuse addresses for which ``NetworkAddress/isPrivate`` is true (loopback, RFC 1918, link-local, …).
    public var denyPrivateNetworks: Bool
    /// Host patterns the URL's host must match, case-insensitively; empty allows every host. A pattern is an exact
    /// host name (`images.example.com`), an IP literal (`192.0.2.7`, `2001:db8::7`, `[2001:db8::7]`, compared as
    /// addresses), or `*.` and a domain (`*.example.com`), which matches every subdomain at any depth but not the
    /// domain itself. A trailing dot is ignored on both sides. Other uses of `*` never match (see
    /// ``isValidHostPattern(_:)``). Unicode and Punycode spellings of a name are not equated.
    public var allowedHosts: [String]

    /// A policy; by default nothing is refused.
    public init(denyPrivateNetworks: Bool = false, allowedHosts: [String] = []) {
        self.denyPrivateNetworks = denyPrivateNetworks
        self.allowedHosts = allowedHosts
    }

    /// Whether a request to `host` (a URL's host, IPv6 literals with or without brackets) may be started.
    public func allows(host: String) -> Bool { refusal(host: host) == nil }

    /// Why a request to `host` must not be started, or nil when it may: the host matches no allowed pattern, or it
    /// is a private IP literal while private networks are denied. Names that resolve to private addresses are
    /// caught later, by ``refusal(address:)``.
    public func refusal(host: String) -> String? {
        guard denyPrivateNetworks || !allowedHosts.isEmpty else { return nil }  // every transfer asks
        let name = Self.normalised(host)
        if denyPrivateNetworks, let address = NetworkAddress(name), let reason = address.privateReason {
            return "\(address) is \(reason)"
        }
        guard !allowedHosts.isEmpty else { return nil }
        if allowedHosts.contains(where: { Self.pattern($0, matches: name) }) { return nil }
        return "\(Self.printable(host)) is not an allowed host"
    }

    /// Why an image cached from `host` must not be served any more, or nil when it may: ``refusal(host:)``, and, when
    /// private networks are denied, `localhost` and `*.localhost` names (always loopback, RFC 6761). The caller checks
    /// the address a cached image came from, when it was recorded, with ``refusal(numericAddress:)``.
    public func refusal(cachedHost host: String) -> String? {
        guard denyPrivateNetworks || !allowedHosts.isEmpty else { return nil }  // every lookup asks
        if let refusal = refusal(host: host) { return refusal }
        let name = Self.normalised(host)
        guard denyPrivateNetworks, name == "localhost" || name.hasSuffix(".localhost") else { return nil }
        return "\(Self.printable(host)) is loopback"
    }

    /// Whether a connection to `address` may be opened.
    public func allows(address: NetworkAddress) -> Bool { refusal(address: address) == nil }

    /// Why a connection to `address` must not be opened (e.g. "169.254.169.254 is link-local (cloud metadata)"), or
    /// nil when it may: only private addresses are refused, and only when `denyPrivateNetworks` is set.
    public func refusal(address: NetworkAddress) -> String? {
        guard denyPrivateNetworks, let reason = address.privateReason else { return nil }
        return "\(address) is \(reason)"
    }

    /// Whether a connection to the address written as `numericAddress` may be opened. Fails closed: when private
    /// networks are denied, text that is not a numeric address (see ``NetworkAddress/init(_:)``) is refused.
    public func allows(numericAddress: String) -> Bool { refusal(numericAddress: numericAddress) == nil }

    /// Why a connection to the address written as `numericAddress` must not be opened, or nil when it may; when
    /// private networks are denied, unparsable text is refused as such.
    public func refusal(numericAddress: String) -> String? {
        guard denyPrivateNetworks else { return nil }
        guard let address = NetworkAddress(numericAddress) else {
            return "\(Self.printable(numericAddress)) is not a numeric IP address"
        }
        return refusal(address: address)
    }

    /// Why a request to a URL whose host cannot be read (a parser refused it) must not be made, or nil when the
    /// policy allows every host and address. Fails closed: a host that cannot be checked is refused.
    public func refusal(unparsableURL url: String) -> String? {
        guard denyPrivateNetworks || !allowedHosts.isEmpty else { return nil }
        let shown = Self.printable(String(url.prefix(200))) + (url.count > 200 ? "…" : "")
        return "the host of \(shown) cannot be read, so it cannot be checked"
    }

    /// Whether `pattern` is a usable ``allowedHosts`` entry: an IP literal, or a host name (optionally after `*.`)
    /// of non-empty dot-separated labels without white space, `*`, `/`, `\`, `@`, `:`, `?`, `#`, `%` or brackets.
    public static func isValidHostPattern(_ pattern: String) -> Bool {
        let text = normalised(pattern)
        if NetworkAddress(text) != nil { return true }
        let name = text.hasPrefix("*.") ? String(text.dropFirst(2)) : text
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let forbidden = Set(" \t*/\\@:?#%[]".utf8)
        guard !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || forbidden.contains($0) }) else { return false }
        return !name.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty)
    }

    /// Whether the normalised `host` matches `pattern` (see ``allowedHosts``).
    static func pattern(_ pattern: String, matches host: String) -> Bool {
        guard isValidHostPattern(pattern) else { return false }
        let wanted = normalised(pattern)
        if let address = NetworkAddress(wanted) { return NetworkAddress(host) == address }
        guard wanted.hasPrefix("*.") else { return wanted == host }
        let suffix = wanted.dropFirst()  // ".example.com"
        guard host.hasSuffix(suffix), NetworkAddress(host) == nil else { return false }
        let labels = host.dropLast(suffix.count).split(separator: ".", omittingEmptySubsequences: false)
        return !labels.contains(where: \.isEmpty)
    }

    /// Lower-cased, without surrounding white space, IPv6 brackets or one trailing dot.
    static func normalised(_ host: String) -> String {
        var text = Substring(host.lowercased()).drop { $0 == " " || $0 == "\t" }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        if text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasSuffix("."), text.count > 1 { text = text.dropLast() }
        return String(text)
    }

    /// At most 256 characters of `text` with control characters shown as `?`, for log messages.
    private static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.prefix(256).map {
                    $0.properties.generalCategory == .control ? "?" : $0
                }))
    }

    /// Why a cached copy that came from `address` must not be served: under `denyPrivateNetworks`, the address it
    /// came from is private (nil when the address was not recorded: older entries are checked by host only).
    public func refusal(cachedFrom address: String?) -> String? {
        guard denyPrivateNetworks, let address else { return nil }
        return refusal(numericAddress: address)
    }
}
