/// A numeric IPv4 or IPv6 address: the address a connection is actually made to, as opposed to a host name.
///
/// Guarantees: a value always holds exactly 4 (IPv4) or 16 (IPv6) bytes; equal addresses compare and hash equal
/// however they were written (`::1` and `0:0:0:0:0:0:0:1`); an IPv4-mapped IPv6 address stays IPv6 (it is a
/// different socket address), but ``isPrivate`` judges it by the IPv4 address it embeds. ``description`` is the
/// canonical text: dotted quad for IPv4, RFC 5952 for IPv6 (lower case, longest run of zero groups as `::`, an
/// IPv4-mapped address as `::ffff:a.b.c.d`), without zone or brackets. Parsing is in `NetworkAddress+Parsing.swift`,
/// classification in `NetworkAddress+Classification.swift`.
public struct NetworkAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Hashable, Sendable {
        case ipv4, ipv6
    }

    /// The address bits, most significant first.
    enum Storage: Hashable, Sendable {
        case v4(UInt32)
        case v6(high: UInt64, low: UInt64)
    }

    let storage: Storage

    init(storage: Storage) { self.storage = storage }

    /// The IPv4 address of 4 bytes in network order (as in `sockaddr_in.sin_addr`).
    ///
    /// - Precondition: `bytes.count == 4`.
    public init(ipv4 bytes: [UInt8]) {
        precondition(bytes.count == 4, "an IPv4 address has 4 bytes, not \(bytes.count)")
        storage = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
    }

    /// The IPv6 address of 16 bytes in network order (as in `sockaddr_in6.sin6_addr`).
    ///
    /// - Precondition: `bytes.count == 16`.
    public init(ipv6 bytes: [UInt8]) {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes, not \(bytes.count)")
        storage = .v6(
            high: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) },
            low: bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// Whether this is an IPv4 or an IPv6 address.
    public var family: Family {
        switch storage {
        case .v4: .ipv4
        case .v6: .ipv6
        }
    }

    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        switch storage {
        case .v4(let value):
            return (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
        case .v6(let high, let low):
            return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        }
    }

    /// Canonical text: `192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1` (see the type's documentation).
    public var description: String {
        switch storage {
        case .v4(let value):
            return Self.dottedQuad(value)
        case .v6(0, let low) where low >> 32 == 0xFFFF:
            return "::ffff:" + Self.dottedQuad(UInt32(truncatingIfNeeded: low))
        case .v6(let high, let low):
            return Self.ipv6Text(
                groups: (0..<4).map { UInt16(truncatingIfNeeded: high >> (48 - 16 * $0)) }
                    + (0..<4).map { UInt16(truncatingIfNeeded: low >> (48 - 16 * $0)) })
        }
    }

    static func dottedQuad(_ value: UInt32) -> String {
        (0..<4).map { String(UInt8(truncatingIfNeeded: value >> (24 - 8 * $0))) }.joined(separator: ".")
    }

    /// RFC 5952 text of eight groups: the first longest run of two or more zero groups becomes `::`.
    private static func ipv6Text(groups: [UInt16]) -> String {
        var bestStart = -1, bestLength = 1
        var runStart = 0
        for index in 0...groups.count {
            if index < groups.count, groups[index] == 0 { continue }
            if index - runStart > bestLength { bestStart = runStart; bestLength = index - runStart }
            runStart = index + 1
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestStart >= 0 else { return hex.joined(separator: ":") }
        let head = hex[..<bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
        return head + "::" + tail
    }
}
