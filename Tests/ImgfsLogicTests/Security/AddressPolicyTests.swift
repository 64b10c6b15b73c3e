import ImgfsModel
import Testing

@Suite("Address policy")
struct AddressPolicyTests {
    @Test("allows everything by default")
    func defaultAllowsEverything() throws {
        let policy = AddressPolicy()
        #expect(
            policy.allows(host: "localhost") && policy.allows(host: "10.0.0.1") && policy.allows(host: "example.com"))
        #expect(policy.allows(address: try #require(NetworkAddress("169.254.169.254"))))
        #expect(policy.allows(numericAddress: "not an address"))
        #expect(policy.refusal(address: try #require(NetworkAddress("127.0.0.1"))) == nil)
    }

    static let patterns = [
        "images.example.com", "*.cdn.example.net", "Upload.Wikimedia.ORG.", "192.0.2.7", "[2001:db8::7]"
    ]

    @Test(
        "matches allowed host patterns case-insensitively; wildcards match subdomains only",
        arguments: [
            ("images.example.com", true), ("IMAGES.Example.COM", true), ("images.example.com.", true),
            ("example.com", false), ("other.example.com", false), ("images.example.com.evil.org", false),
            ("evilimages.example.com", false), ("a.cdn.example.net", true), ("a.b.cdn.example.net", true),
            ("A.CDN.Example.Net", true), ("cdn.example.net", false), ("xcdn.example.net", false),
            (".cdn.example.net", false),
            ("..cdn.example.net", false), ("a..cdn.example.net", false),
            ("cdn.example.net.evil.org", false), ("upload.wikimedia.org", true), ("192.0.2.7", true),
            ("192.0.2.8", false),
            ("2001:db8::7", true), ("[2001:db8:0::7]", true), ("2001:db8::8", false), ("", false)
        ])
    func matchesPatterns(_ host: String, _ allowed: Bool) {
        let policy = AddressPolicy(allowedHosts: Self.patterns)
        #expect(policy.allows(host: host) == allowed, "\(host)")
        #expect((policy.refusal(host: host) == nil) == allowed, "\(host)")
    }

    @Test("explains refused hosts")
    func hostRefusals() {
        let policy = AddressPolicy(allowedHosts: ["*.example.com"])
        #expect(policy.refusal(host: "example.org") == "example.org is not an allowed host")
        #expect(policy.refusal(host: "a.example.com") == nil)
        let strict = AddressPolicy(denyPrivateNetworks: true, allowedHosts: ["10.0.0.1", "*.example.com"])
        #expect(strict.refusal(host: "10.0.0.1") == "10.0.0.1 is private (RFC 1918)")
        #expect(strict.refusal(host: "[::ffff:7f00:1]") == "::ffff:127.0.0.1 is loopback as IPv4-mapped 127.0.0.1")
        #expect(strict.allows(host: "a.example.com"))
        #expect(AddressPolicy(denyPrivateNetworks: true).allows(host: "localhost"))  // caught at connect time
    }

    @Test(
        "validates host patterns",
        arguments: [
            ("example.com", true), ("*.example.com", true), ("*.com", true), ("localhost", true), ("192.0.2.1", true),
            ("[::1]", true), ("::1", true), ("EXAMPLE.com.", true), ("*", false), ("*.", false), ("", false),
            ("*.*.example.com", false), ("a*.example.com", false), ("example.*", false), ("ex ample.com", false),
            ("example..com", false), (".example.com", false), ("user@example.com", false), ("example.com:443", false),
            ("example.com/path", false)
        ])
    func validatesPatterns(_ pattern: String, _ valid: Bool) {
        #expect(AddressPolicy.isValidHostPattern(pattern) == valid, "\(pattern)")
    }

    @Test("invalid patterns never match")
    func invalidPatternsNeverMatch() {
        let policy = AddressPolicy(allowedHosts: ["*", "a*.example.com", "*.*.example.com"])
        #expect(!policy.allows(host: "example.com") && !policy.allows(host: "ab.example.com"))
        #expect(!policy.allows(host: "a.b.example.com"))
    }

    @Test(
        "denies private addresses only when asked",
        arguments: [
            ("169.254.169.254", "169.254.169.254 is link-local (cloud metadata)"),
            ("127.0.0.1", "127.0.0.1 is loopback"),
            ("10.0.0.1", "10.0.0.1 is private (RFC 1918)"), ("fd12::1", "fd12::1 is unique local (fc00::/7)"),
            ("::ffff:192.168.1.1", "::ffff:192.168.1.1 is private (RFC 1918) as IPv4-mapped 192.168.1.1"),
            ("0.0.0.0", "0.0.0.0 is unspecified (this host)"), ("::", ":: is unspecified (this host)"),
            ("fe80::1%eth0", "fe80::1 is link-local")
        ])
    func deniesPrivate(_ text: String, _ reason: String) throws {
        let address = try #require(NetworkAddress(text))
        let strict = AddressPolicy(denyPrivateNetworks: true)
        #expect(!strict.allows(address: address))
        #expect(strict.refusal(address: address) == reason)
        #expect(strict.refusal(numericAddress: text) == reason)
        #expect(AddressPolicy(denyPrivateNetworks: false).allows(address: address))
    }

    @Test(
        "allows public addresses when private networks are denied",
        arguments: [
            "8.8.8.8", "93.184.216.34", "172.32.0.0", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
            "2002:808:808::"
        ])
    func allowsPublic(_ text: String) throws {
        let strict = AddressPolicy(denyPrivateNetworks: true)
        #expect(strict.allows(address: try #require(NetworkAddress(text))))
        #expect(strict.allows(numericAddress: text))
    }

    @Test("fails closed on text that is not a numeric address")
    func failsClosed() {
        let strict = AddressPolicy(denyPrivateNetworks: true)
        #expect(strict.refusal(numericAddress: "127.1") == "127.1 is not a numeric IP address")
        #expect(!strict.allows(numericAddress: "localhost"))
        #expect(strict.refusal(numericAddress: "a\u{1B}[31m") == "a?[31m is not a numeric IP address")
    }
}
