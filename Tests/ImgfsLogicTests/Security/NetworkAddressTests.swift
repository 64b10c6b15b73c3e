import ImgfsModel
import Testing

@Suite("Network addresses")
struct NetworkAddressTests {
    typealias SpecialRange = NetworkAddress.SpecialRange

    /// Every special range, its edges, and the public neighbours just outside it. Nil means public.
    static let classifications: [(String, SpecialRange?)] = [
        // 0.0.0.0/8
        ("0.0.0.0", .unspecified), ("0.255.255.255", .unspecified), ("1.0.0.0", nil),
        // 127.0.0.0/8
        ("126.255.255.255", nil), ("127.0.0.0", .loopback), ("127.0.0.1", .loopback), ("127.255.255.255", .loopback),
        ("128.0.0.0", nil),
        // 169.254.0.0/16
        ("169.253.255.255", nil), ("169.254.0.0", .linkLocal), ("169.254.169.254", .cloudMetadata),
        ("169.254.169.253", .linkLocal), ("169.254.255.255", .linkLocal), ("169.255.0.0", nil),
        // RFC 1918
        ("9.255.255.255", nil), ("10.0.0.0", .privateUse), ("10.255.255.255", .privateUse), ("11.0.0.0", nil),
        ("172.15.255.255", nil), ("172.16.0.0", .privateUse), ("172.31.255.255", .privateUse), ("172.32.0.0", nil),
        ("192.167.255.255", nil), ("192.168.0.0", .privateUse), ("192.168.255.255", .privateUse), ("192.169.0.0", nil),
        // 100.64.0.0/10
        ("100.63.255.255", nil), ("100.64.0.0", .sharedAddressSpace), ("100.100.100.200", .sharedAddressSpace),
        ("100.127.255.255", .sharedAddressSpace), ("100.128.0.0", nil),
        // 192.0.0.0/24
        ("191.255.255.255", nil), ("192.0.0.0", .ietfProtocolAssignments), ("192.0.0.255", .ietfProtocolAssignments),
        ("192.0.1.0", nil), ("192.0.2.1", nil),
        // 198.18.0.0/15
        ("198.17.255.255", nil), ("198.18.0.0", .benchmarking), ("198.19.255.255", .benchmarking), ("198.20.0.0", nil),
        // multicast, reserved, broadcast
        ("223.255.255.255", nil), ("224.0.0.0", .multicast), ("239.255.255.255", .multicast),
        ("240.0.0.0", .reserved), ("255.255.255.254", .reserved), ("255.255.255.255", .broadcast),
        // public IPv4
        ("8.8.8.8", nil), ("1.1.1.1", nil), ("93.184.216.34", nil),
        // IPv6 specials
        ("::", .unspecified), ("::1", .loopback), ("::2", .unspecified), ("0:0:0:0:0:0:0:1", .loopback),
        ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil), ("fe80::", .linkLocal), ("fe80::1%eth0", .linkLocal),
        ("febf:ffff::1", .linkLocal), ("fec0::", .siteLocal), ("feff::1", .siteLocal),
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", nil), ("fc00::", .uniqueLocal), ("fd00:ec2::254", .uniqueLocal),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .uniqueLocal), ("fe00::", nil),
        ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .siteLocal), ("ff00::", .multicast), ("ff02::1", .multicast),
        ("64:ff9b:1::a00:1", .localNAT64), ("64:ff9b:1:ffff::", .localNAT64), ("64:ff9b:2::", nil),
        // IPv6 forms embedding IPv4
        ("::ffff:10.0.0.1", .privateUse), ("::ffff:8.8.8.8", nil), ("::ffff:127.0.0.1", .loopback),
        ("::FFFF:a9fe:a9fe", .cloudMetadata), ("::ffff:0.0.0.0", .unspecified), ("::fffe:a00:1", nil),
        ("::10.0.0.1", .privateUse), ("::8.8.8.8", nil), ("::0.0.0.2", .unspecified),
        ("64:ff9b::192.168.1.1", .privateUse), ("64:ff9b::8.8.8.8", nil), ("64:ff9b::1:a00:1", nil),
        ("2002:a00:1::", .privateUse), ("2002:7f00:1::1", .loopback), ("2002:808:808::1", nil),
        ("2003:a00:1::", nil), ("2001:db8::1", nil),
        // public IPv6
        ("2606:4700:4700::1111", nil), ("2a00:1450:4001:82b::200e", nil), ("[2001:4860:4860::8888]", nil)
    ]

    @Test("classifies special ranges and their neighbours", arguments: classifications)
    func classifies(_ text: String, _ range: SpecialRange?) throws {
        let address = try #require(NetworkAddress(text))
        #expect(address.specialRange == range, "\(text)")
        #expect(address.isPrivate == (range != nil), "\(text)")
        #expect((address.privateReason == nil) == (range == nil), "\(text)")
    }

    @Test("covers every special range")
    func coversEveryRange() {
        #expect(Set(Self.classifications.compactMap(\.1)) == Set(SpecialRange.allCases))
        #expect(Self.classifications.count >= 40)
    }

    @Test(
        "refuses what is not a numeric address",
        arguments: [
            "", "localhost", "example.com", "1.2.3", "127.1", "1.2.3.4.5", "0x7f.0.0.1", "0x7f.1", "0177.0.0.1",
            "01.2.3.4", "1.2.3.04", "256.0.0.1", "1.2.3.-1", "1.2.3.+1", "2130706433", " 1.2.3.4", "1.2.3.4 ",
            "1.2.3.4.",
            ".1.2.3", "1..2.3", "1.2.3.4%eth0", "[1.2.3.4]", "١.٢.٣.٤", "1.2.3.4/24",
            ":", ":::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "1::2::3", ":1::", "1::2:", "::1:", "12345::",
            "g::1", "fe80::1%", "[::1", "::1]", "[]", "[::1]]", "::1.2.3", "::1.2.3.4.5", "1.2.3.4::",
            "::ffff:1.2.3.04",
            "::ffff:1.2.3.4:5", "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5:6::7:8", "fe80::1%eth 0", "::1%25%eth0",
            String(repeating: "0", count: 200) + "::1"
        ])
    func refusesMalformed(_ text: String) {
        #expect(NetworkAddress(text) == nil, "\(text)")
    }

    @Test(
        "accepts the RFC 4291 text forms and prints them canonically (RFC 5952)",
        arguments: [
            ("192.0.2.1", "192.0.2.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
            ("::", "::"), ("::1", "::1"), ("1::", "1::"), ("[::1]", "::1"), ("fe80::1%eth0", "fe80::1"),
            ("[fe80::1%25eth0]", "fe80::1"), ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"), ("2001:db8::0:1", "2001:db8::1"),
            ("2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
            ("1:0:0:2:0:0:0:3", "1:0:0:2::3"), ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
            ("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"),
            ("::ffff:1.2.3.4", "::ffff:1.2.3.4"), ("::ffff:0102:0304", "::ffff:1.2.3.4"), ("::1.2.3.4", "::102:304"),
            ("64:ff9b::10.0.0.1", "64:ff9b::a00:1"), ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304")
        ])
    func parsesAndPrints(_ text: String, _ canonical: String) throws {
        let address = try #require(NetworkAddress(text))
        #expect(address.description == canonical)
        #expect(NetworkAddress(canonical) == address)
    }

    @Test("converts to and from raw bytes")
    func rawBytes() throws {
        let v4 = NetworkAddress(ipv4: [169, 254, 169, 254])
        #expect(v4 == NetworkAddress("169.254.169.254"))
        #expect(v4.family == .ipv4 && v4.bytes == [169, 254, 169, 254])
        let raw: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let v6 = NetworkAddress(ipv6: raw)
        #expect(v6 == NetworkAddress("2001:db8::1") && v6.family == .ipv6 && v6.bytes == raw)
        let mapped = NetworkAddress(ipv6: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1])
        #expect(mapped.description == "::ffff:10.0.0.1" && mapped.isPrivate)
        #expect(mapped != NetworkAddress(ipv4: [10, 0, 0, 1]))
        #expect(Set([NetworkAddress("::1"), NetworkAddress("0::0:1"), NetworkAddress("[::1]")]).count == 1)
    }

    @Test("explains why an address is private")
    func reasons() throws {
        #expect(try #require(NetworkAddress("169.254.169.254")).privateReason == "link-local (cloud metadata)")
        #expect(try #require(NetworkAddress("10.1.2.3")).privateReason == "private (RFC 1918)")
        #expect(try #require(NetworkAddress("::1")).privateReason == "loopback")
        #expect(
            try #require(NetworkAddress("::ffff:10.0.0.1")).privateReason
                == "private (RFC 1918) as IPv4-mapped 10.0.0.1")
        #expect(
            try #require(NetworkAddress("2002:a9fe:a9fe::")).privateReason
                == "link-local (cloud metadata) as 6to4 169.254.169.254")
        #expect(try #require(NetworkAddress("64:ff9b::7f00:1")).privateReason == "loopback as NAT64 127.0.0.1")
        #expect(try #require(NetworkAddress("8.8.8.8")).privateReason == nil)
        let embedded = try #require(NetworkAddress("::192.168.0.1")?.embeddedIPv4)
        #expect(embedded.embedding == .ipv4Compatible && embedded.address == NetworkAddress("192.168.0.1"))
        #expect(NetworkAddress("::1")?.embeddedIPv4 == nil && NetworkAddress("10.0.0.1")?.embeddedIPv4 == nil)
    }
}
