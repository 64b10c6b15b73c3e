/// A validated `http` or `https` URL: the identity of one image file.
///
/// Guarantees: the scheme is http or https, there is a host, no credentials, no control characters, and the text is at
/// most ``maximumLength`` bytes. `string` is exactly the text the file name decodes to (fragment included), so two
/// names that decode to the same text are the same file. `resourceKey` drops the fragment, which is never sent to a
/// server. Bytes a URL may not hold as they are (space, `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`, non-ASCII)
/// are accepted in the path and query and requested percent-encoded (``requestString``), as browsers and curl do;
/// the cache key is the SHA-256 of that request, so names that differ only in their fragment or in how such bytes are
/// spelled (`a b.png`, `a%20b.png`) share one download and one cache entry. When requests to the host carry
/// credentials, the key is scoped by their digest (``credentialScope``). The key is computed once, when the URL is
/// made, from the rules it is made under (``CacheKeying``, none by default); a URL made from another for the same
/// resource (``withoutFragment``, ``markedBackground``) keeps its key.
public struct ImageURL: Hashable, Sendable, CustomStringConvertible {
    /// The longest URL accepted, in bytes of UTF-8.
    public static let maximumLength = 8192

    /// The URL text, as decoded from the file name.
    public let string: String
    /// `http` or `https`, lower-case.
    public let scheme: String
    /// The host as written (without brackets for IPv6 literals), lower-cased.
    public let host: String
    /// The port, explicit or the scheme's default.
    public let port: Int
    /// SHA-256 (hex) of ``resourceKey`` without the query parameters the policy drops from cache keys
    /// (``CacheKeyRules``), scoped by ``credentialScope`` when there is one (``scopedKey(_:scope:)``): what caches
    /// and downloads are keyed by, so an image fetched with credentials is never served to requests without them.
    public private(set) var cacheKey: String
    /// The digest of the credentials requests to this URL's host carry (``RequestProfile/credentialScope``), when
    /// they carry any.
    public private(set) var credentialScope: String?

    /// Parses `string`; its cache key is computed under `keying` (nil: no rules, the key of the request text).
    public init(_ string: String, keying: (any CacheKeying)? = nil) throws(NameError) {
        let bytes = Array(string.utf8)
        guard bytes.count <= Self.maximumLength else { throw .tooLong(bytes.count) }
        if let bad = bytes.first(where: { $0 < 0x20 || $0 == 0x7f }) { throw .forbiddenCharacter(bad) }
        guard let schemeEnd = bytes.firstIndex(of: UInt8(ascii: ":")), schemeEnd > 0,
            bytes[..<schemeEnd].allSatisfy(Self.isSchemeByte)
        else { throw .notAURL }
        let scheme = String(decoding: bytes[..<schemeEnd], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme(scheme) }
        guard bytes[(schemeEnd + 1)...].starts(with: "//".utf8) else { throw .notAURL }
        let authorityStart = schemeEnd + 3
        let authorityEnd =
            bytes[authorityStart...].firstIndex(where: { $0 == 0x2f || $0 == 0x3f || $0 == 0x23 }) ?? bytes.endIndex
        let authority = bytes[authorityStart..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw .credentials }
        // A host name cannot hold these (a Unicode host is left for the client's IDN conversion).
        guard !authority.contains(where: { $0 < 0x80 && Self.mustBeEncoded($0) }) else { throw .notAURL }
        let (host, port) = try Self.splitHostPort(authority, defaultPort: scheme == "https" ? 443 : 80)
        self.string = string
        self.scheme = scheme
        self.host = host
        self.port = port
        let requested = Self.encodedForRequest(Self.withoutFragment(string), scheme: scheme)
        let key = SHA256.hex(of: (keying?.cacheKeyText(for: requested, host: host) ?? requested).utf8)
        credentialScope = keying?.credentialScope(for: host)
        self.cacheKey = credentialScope.map { Self.scopedKey(key, scope: $0) } ?? key
    }

    /// The cache key of a URL whose unscoped key is `key`, fetched with the credentials of `scope`.
    public static func scopedKey(_ key: String, scope: String) -> String {
        SHA256.hex(of: "imgfs credentials v1/\(scope)/\(key)".utf8)
    }

    /// The URL without its fragment: what is requested and what downloads and cache entries are keyed by.
    public var resourceKey: String { Self.withoutFragment(string) }

    /// This URL without its fragment.
    public var withoutFragment: ImageURL {
        guard string.utf8.contains(0x23) else { return self }  // "#"
        return sameResource(resourceKey)
    }

    /// The URL `text` (this one's resource with another fragment or none) with this URL's cache key and scope; this
    /// URL when `text` does not parse.
    func sameResource(_ text: String) -> ImageURL {
        guard var url = try? ImageURL(text) else { return self }
        url.cacheKey = cacheKey
        url.credentialScope = credentialScope
        return url
    }

    private static func withoutFragment(_ text: String) -> String {
        guard let hash = text.utf8.firstIndex(of: 0x23) else { return text }  // "#"
        return String(text[..<hash])
    }

    /// `scheme://host:port`: the unit that per-host connection limits count.
    public var hostKey: String { "\(scheme)://\(host):\(port)" }

    /// The text to hand to an HTTP client: ``resourceKey`` with the bytes a URL may not hold as they are (space,
    /// `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}` and everything outside ASCII) percent-encoded in the path and
    /// query (a Unicode host is left for the client's IDN conversion). Escapes already there are kept as they are.
    public var requestString: String { Self.encodedForRequest(resourceKey, scheme: scheme) }

    private static func encodedForRequest(_ text: String, scheme: String) -> String {
        let key = Array(text.utf8)
        let pathStart = key[(scheme.utf8.count + 3)...].firstIndex(where: { $0 == 0x2f || $0 == 0x3f }) ?? key.endIndex
        guard key[pathStart...].contains(where: mustBeEncoded) else { return text }
        var out = Array(key[..<pathStart])
        for byte in key[pathStart...] {
            if mustBeEncoded(byte) {
                out.append(contentsOf: "%\(byte < 16 ? "0" : "")\(String(byte, radix: 16, uppercase: true))".utf8)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `byte` must be percent-encoded in a request (RFC 3986 allows it nowhere in a URL).
    private static func mustBeEncoded(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x80..., ...0x20, 0x22, 0x3c, 0x3e, 0x5c, 0x5e, 0x60, 0x7b, 0x7c, 0x7d: true  // " < > \ ^ ` { | }
        default: false
        }
    }

    /// The URL's text.
    public var description: String { string }

    // Every other field is derived from the text, so it alone decides equality (hashing all fields cost the inode
    // table's lock holders time on every request).
    /// Whether both are the same text.
    public static func == (lhs: ImageURL, rhs: ImageURL) -> Bool { lhs.string == rhs.string }

    /// Hashes the text alone.
    public func hash(into hasher: inout Hasher) { hasher.combine(string) }

    // MARK: - Parsing helpers

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }

    private static func splitHostPort(
        _ authority: ArraySlice<UInt8>, defaultPort: Int
    ) throws(NameError) -> (String, Int) {
        var hostBytes = authority
        var portBytes: ArraySlice<UInt8>? = nil
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw .notAURL }
            hostBytes = authority[(authority.startIndex + 1)..<close]
            let rest = authority[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { throw .notAURL }
                portBytes = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            hostBytes = authority[..<colon]
            portBytes = authority[(colon + 1)...]
        }
        guard !hostBytes.isEmpty else { throw .missingHost }
        var port = defaultPort
        if let portBytes, !portBytes.isEmpty {
            guard portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), (1...65535).contains(value)
            else { throw .invalidPort }
            port = value
        }
        return (String(decoding: hostBytes, as: UTF8.self).lowercased(), port)
    }
}
