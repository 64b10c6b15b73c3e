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
