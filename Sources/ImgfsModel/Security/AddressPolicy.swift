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
