extension NetworkAddress {
    /// A range of addresses that is not reachable on the public internet, or reaches the local host, the local
    /// network or a provider's internal services. ``description`` is the phrase used in refusals.
    public enum SpecialRange: Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// 0.0.0.0/8 ("this network"; 0.0.0.0 reaches the local host on Linux) and `::`.
        case unspecified
        /// 127.0.0.0/8 and `::1`.
        case loopback
        /// 169.254.0.0/16 (other than 169.254.169.254) and fe80::/10.
        case linkLocal
        /// 169.254.169.254, the instance metadata service of most clouds (part of link-local).
        case cloudMetadata
        /// RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16.
        case privateUse
        /// 100.64.0.0/10, carrier-grade NAT (RFC 6598); also where some clouds put internal services.
        case sharedAddressSpace
        /// 192.0.0.0/24, IETF protocol assignments (RFC 6890).
        case ietfProtocolAssignments
        /// 198.18.0.0/15, network benchmarking (RFC 2544).
        case benchmarking
        /// 240.0.0.0/4 other than the broadcast address: reserved, but routable on Linux and used internally.
        case reserved
        /// 255.255.255.255, limited broadcast.
        case broadcast
        /// 224.0.0.0/4 and ff00::/8.
        case multicast
        /// fc00::/7, IPv6 unique local addresses (the IPv6 counterpart of RFC 1918).
        case uniqueLocal
        /// fec0::/10, deprecated IPv6 site-local addresses.
        case siteLocal
        /// 64:ff9b:1::/48, local-use NAT64 (RFC 8215), which translates to addresses of the local network.
        case localNAT64

        /// A phrase that completes "<address> is …", e.g. "link-local (cloud metadata)".
        public var description: String {
            switch self {
            case .unspecified: "unspecified (this host)"
            case .loopback: "loopback"
            case .linkLocal: "link-local"
            case .cloudMetadata: "link-local (cloud metadata)"
            case .privateUse: "private (RFC 1918)"
            case .sharedAddressSpace: "shared address space (carrier-grade NAT, 100.64.0.0/10)"
            case .ietfProtocolAssignments: "reserved for IETF protocol assignments (192.0.0.0/24)"
            case .benchmarking: "reserved for benchmarking (198.18.0.0/15)"
            case .reserved: "reserved (240.0.0.0/4)"
            case .broadcast: "broadcast"
            case .multicast: "multicast"
            case .uniqueLocal: "unique local (fc00::/7)"
            case .siteLocal: "site-local (fec0::/10)"
            case .localNAT64: "local-use NAT64 (64:ff9b:1::/48)"
            }
        }
    }

    /// How an IPv6 address carries an IPv4 address that traffic to it ends up at.
    public enum Embedding: Hashable, Sendable, CustomStringConvertible {
        /// ::ffff:0:0/96; a dual-stack socket connects to the IPv4 address itself.
        case ipv4Mapped
        /// ::/96 other than `::` and `::1` (deprecated IPv4-compatible addresses).
        case ipv4Compatible
        /// 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052).
        case nat64
        /// 2002::/16, 6to4 (RFC 3056); the IPv4 address is in bits 16–47.
        case sixToFour

        /// "IPv4-mapped", "IPv4-compatible", "NAT64" or "6to4".
        public var description: String {
            switch self {
            case .ipv4Mapped: "IPv4-mapped"
            case .ipv4Compatible: "IPv4-compatible"
            case .nat64: "NAT64"
            case .sixToFour: "6to4"
            }
        }
    }

    /// The IPv4 address embedded in this IPv6 address and how, or nil (always nil for IPv4 addresses).
    public var embeddedIPv4: (embedding: Embedding, address: NetworkAddress)? {
        guard case .v6(let high, let low) = storage else { return nil }
        let lowIPv4 = NetworkAddress(storage: .v4(UInt32(truncatingIfNeeded: low)))
        if high == 0, low >> 32 == 0xFFFF { return (.ipv4Mapped, lowIPv4) }
        if high == 0, low >> 32 == 0, low > 1 { return (.ipv4Compatible, lowIPv4) }
        if high == 0x0064_FF9B_0000_0000, low >> 32 == 0 { return (.nat64, lowIPv4) }
        if high >> 48 == 0x2002 {
            return (.sixToFour, NetworkAddress(storage: .v4(UInt32(truncatingIfNeeded: high >> 16))))
        }
        return nil
    }

    /// The special range this address is in, judging an IPv6 address that embeds an IPv4 address (see
    /// ``embeddedIPv4``) by that IPv4 address; nil for a public address.
    public var specialRange: SpecialRange? {
        if let embedded = embeddedIPv4 { return embedded.address.specialRange }
        switch storage {
        case .v4(let a): return Self.ipv4Range(a)
        case .v6(let high, let low): return Self.ipv6Range(high: high, low: low)
        }
    }

    /// Whether connecting to this address could reach the local host, the local or a provider's network, or
    /// anything else that is not a public unicast address: true exactly when ``specialRange`` is not nil.
    public var isPrivate: Bool { specialRange != nil }

    /// Why the address is private, as a phrase completing "<address> is …" (`link-local (cloud metadata)`,
    /// `private (RFC 1918) as IPv4-mapped 10.0.0.1`); nil for a public address.
    public var privateReason: String? {
        guard let range = specialRange else { return nil }
        guard let embedded = embeddedIPv4 else { return range.description }
        return "\(range) as \(embedded.embedding) \(embedded.address)"
    }

    private static func ipv4Range(_ a: UInt32) -> SpecialRange? {
        func within(_ base: UInt32, _ prefixLength: UInt32) -> Bool {
            a >> (32 - prefixLength) == base >> (32 - prefixLength)
        }
        if within(0x0000_0000, 8) { return .unspecified }
        if within(0x7F00_0000, 8) { return .loopback }
        if a == 0xA9FE_A9FE { return .cloudMetadata }
        if within(0xA9FE_0000, 16) { return .linkLocal }
        if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return .privateUse }
        if within(0x6440_0000, 10) { return .sharedAddressSpace }
        if within(0xC000_0000, 24) { return .ietfProtocolAssignments }
        if within(0xC612_0000, 15) { return .benchmarking }
        if within(0xE000_0000, 4) { return .multicast }
        if a == 0xFFFF_FFFF { return .broadcast }
        if within(0xF000_0000, 4) { return .reserved }
        return nil
    }

    private static func ipv6Range(high: UInt64, low: UInt64) -> SpecialRange? {
        if high == 0, low == 0 { return .unspecified }
        if high == 0, low == 1 { return .loopback }
        if high >> 16 == 0x0064_FF9B_0001 { return .localNAT64 }
        if high >> 54 == 0xFE80 >> 6 { return .linkLocal }
        if high >> 54 == 0xFEC0 >> 6 { return .siteLocal }
        if high >> 57 == 0xFC00 >> 9 { return .uniqueLocal }
        if high >> 56 == 0xFF { return .multicast }
        return nil
    }
}
