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
