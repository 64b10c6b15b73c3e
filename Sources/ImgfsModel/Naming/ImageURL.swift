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

// MARK: - ImageURL+Priority

// MARK: - The background mark: a fragment that asks for a low-priority transfer

extension ImageURL {
    /// The fragment `imgfs prefetch` adds to the names it reads: their transfers wait behind every other class.
    public static let backgroundFragment = "imgfs-background"
    private static let backgroundSuffix = "#" + backgroundFragment

    /// ``FetchPriority/background`` when the URL's fragment is ``backgroundFragment``, else ``FetchPriority/waited``.
    /// Fragments are never sent, so the mark changes only the admission order, never the image.
    public var requestedPriority: FetchPriority {
        string.hasSuffix(Self.backgroundSuffix) ? .background : .waited
    }

    /// This URL with the background mark in place of its fragment.
    public var markedBackground: ImageURL {
        sameResource(resourceKey + "#" + Self.backgroundFragment)
    }
}

// MARK: - FetchPriority

/// How urgently a transfer is wanted; transfers wait for admission by class, most urgent first, FIFO within a class.
///
/// Guarantees: the order is total and fixed: ``waited`` before ``readAhead`` before ``background``.
public enum FetchPriority: Int, Comparable, Sendable, CaseIterable {
    /// Someone waits for it now: an open, a read, a stat or a lookup.
    case waited = 0
    /// Loaded ahead of a viewer stepping through a list; nobody waits for it yet.
    case readAhead = 1
    /// Warming the cache (`imgfs prefetch`); nobody waits for it.
    case background = 2

    /// Whether `lhs` goes before `rhs`: a lower raw value is more urgent.
    public static func < (lhs: FetchPriority, rhs: FetchPriority) -> Bool { lhs.rawValue < rhs.rawValue }
}

// MARK: - ImagePath

/// The long-URL scheme: how any http(s) URL up to ``ImageURL/maximumLength`` bytes gets a path that every program
/// can open, with each component at most 255 bytes and the whole path under `PATH_MAX` (4096).
///
/// Three forms, the first that fits is used (see docs/SEMANTICS.md):
/// - plain: `img/<encoded>` when the encoded URL fits in one 255-byte component;
/// - chunked: `img/+/<c1>+/<c2>+/…/<cN>`: the encoded URL cut into 254-byte pieces, every piece but the last followed
///   by a `+` (which the encoder never leaves unescaped); stateless, used when the whole path fits;
/// - digest: `img/~<sha256 of the URL>`: a short name that the mount resolves from its registry; `imgfs path`
///   registers the URL first by walking the chunked form one directory at a time, which no path limit applies to.
public enum ImagePath {
    /// The directory, under the mount root, that holds the images.
    public static let imagesDirectory = "img"
    /// The directory, under ``imagesDirectory``, that starts a chunked name.
    public static let chunkDirectory = "+"
    /// What starts a digest name.
    public static let digestPrefix = "~"
    /// The longest file-name component the scheme produces.
    public static let componentLimit = 255
    /// The longest path the scheme produces, in bytes (PATH_MAX less its terminating NUL).
    public static let pathLimit = 4095
    /// Room left for the mount point when the path is printed relative to it.
    public static let assumedMountPointLength = 512

    /// One of the three forms.
    public enum Form: Equatable, Sendable {
        case plain(name: String)
        case chunked(chunks: [String])
        case digest(name: String, chunks: [String])

        /// The path relative to the mount root.
        public var relativePath: String {
            switch self {
            case .plain(let name), .digest(let name, _): "\(ImagePath.imagesDirectory)/\(name)"
            case .chunked(let chunks):
                ([ImagePath.imagesDirectory, ImagePath.chunkDirectory] + chunks).joined(separator: "/")
            }
        }
    }

    /// The form to use for `url`. `mountPointLength` is the byte length of the mount point the path will be joined to,
    /// or nil when unknown (then ``assumedMountPointLength`` is reserved).
    public static func form(for url: ImageURL, mountPointLength: Int? = nil) -> Form {
        let encoded = NameCodec.encode(url.string)
        if encoded.utf8.count <= componentLimit { return .plain(name: encoded) }
        let pieces = chunks(of: encoded)
        let chunked = Form.chunked(chunks: pieces)
        let budget = pathLimit - (mountPointLength.map { $0 + 1 } ?? assumedMountPointLength)
        if chunked.relativePath.utf8.count <= budget { return chunked }
        return .digest(name: digestName(for: url), chunks: pieces)
    }

    /// The encoded URL cut into components: 254 bytes and a `+` each, the last one without the `+`.
    public static func chunks(of encoded: String) -> [String] {
        let bytes = Array(encoded.utf8)
        let size = componentLimit - 1
        return stride(from: 0, to: bytes.count, by: size).map { start in
            let end = min(start + size, bytes.count)
            let piece = String(decoding: bytes[start..<end], as: UTF8.self)
            return end < bytes.count ? piece + "+" : piece
        }
    }

    /// `~` followed by the SHA-256 of the URL text, in lower-case hex.
    public static func digestName(for url: ImageURL) -> String {
        digestPrefix + SHA256.hex(of: url.string.utf8)
    }

    /// Whether `name` has the shape of a digest name.
    public static func isDigestName<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        name.count == 65 && name.first == UInt8(ascii: "~")
            && name.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// Whether a component of a chunked name continues (ends with `+`) rather than ends the URL.
    public static func isContinuation<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        name.count > 1 && name.reversed().first == UInt8(ascii: "+")
    }
}

// MARK: - NameCodec

/// Percent-encoding between URLs and single file-name components.
///
/// `encode` escapes every byte except the RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), exactly as Python's
/// `urllib.parse.quote(url, safe='')` does, so the result never holds `/`, `+` or `%` unescaped. `decode` accepts that
/// form and anything laxer (`encodeURIComponent` output, lower-case hex, unescaped characters), and rejects a `%`
/// that is not followed by two hexadecimal digits and bytes that do not decode to UTF-8 text.
public enum NameCodec {
    /// The percent-encoded form of `text`.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text that the percent-encoded `name` stands for.
    public static func decode<Name: Collection<UInt8>>(_ name: Name) throws(NameError) -> String {
        try decode(Array(name))
    }

    /// The text that the percent-encoded `name` stands for (every lookup decodes its name: a loop over concrete
    /// bytes, where a generic one called from another module would go through witness calls per byte).
    public static func decode(_ name: [UInt8]) throws(NameError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(name.count)
        var iterator = name.makeIterator()
        var offset = 0
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw .invalidPercentEscape(offset: offset)
                }
                if high == 0 && low == 0 { throw .forbiddenCharacter(0) }
                out.append(high << 4 | low)
                offset += 3
            } else {
                if byte == 0 { throw .forbiddenCharacter(0) }
                out.append(byte)
                offset += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .notUTF8 }
        return text
    }

    // MARK: - Bytes

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "~")
    }

    /// The value of a hexadecimal digit (either case), or nil.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
