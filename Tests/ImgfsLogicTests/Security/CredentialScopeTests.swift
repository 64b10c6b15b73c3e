import ImgfsModel
import Testing

/// The digest that keeps images fetched with credentials apart in the caches and the shared tier.
@Suite("Credential scope")
struct CredentialScopeTests {
    private static func scope(_ headers: [String], cookieFile: String? = nil, userAgent: String? = nil) -> String? {
        var defaults = HostRule(pattern: "*")
        defaults.headers = headers
        defaults.cookieFile = cookieFile
        defaults.userAgent = userAgent
        return HostRules(defaults: defaults).profile(for: "images.example").credentialScope
    }

    @Test("none without headers or cookie file (User-Agent and Referer do not count)")
    func none() {
        #expect(Self.scope([]) == nil)
        #expect(Self.scope([], userAgent: "Gallery/2") == nil)
        #expect(Self.scope(["Referer: https://gallery.example/"]) == nil)
    }

    @Test("one per set of credentials: another value, header or cookie file is another scope; order does not matter")
    func distinct() {
        let token = Self.scope(["Authorization: Bearer s3cret"])
        #expect(token != nil)
        #expect(token == Self.scope(["authorization:   Bearer s3cret"]), "header names ignore case, values lead spaces")
        #expect(token != Self.scope(["Authorization: Bearer other"]))
        #expect(token != Self.scope(["Authorization: Bearer s3cret", "X-Api-Key: 1"]))
        #expect(Self.scope(["A: 1", "B: 2"]) == Self.scope(["B: 2", "A: 1"]))
        #expect(Self.scope([], cookieFile: "/a") != nil)
        #expect(Self.scope([], cookieFile: "/a") != Self.scope([], cookieFile: "/b"))
    }

    @Test("a digest: 64 hex digits that do not contain the credentials")
    func digest() throws {
        let scope = try #require(Self.scope(["Authorization: Bearer s3cret"]))
        #expect(scope.count == 64 && scope.allSatisfy(\.isHexDigit))
        #expect(!scope.contains("s3cret"))
    }
}
