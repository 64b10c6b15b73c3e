import ImgfsModel
import ImgfsPipeline
import Testing

/// Issue 35: request rules are values a mount holds and each request carries, not a process-global.
@Suite("Request rules as values")
struct RulesSnapshotTests {
    /// Rules whose command-line defaults send `header` to every host.
    private static func sending(_ header: String) -> HostRules {
        var defaults = HostRule(pattern: "*")
        defaults.headers = [header]
        return HostRules(defaults: defaults)
    }

    @Test("two holders in one process name the same URL under their own rules, at the same time")
    func twoHolders() throws {
        let credentialed = RequestRulesHolder(Self.sending("Authorization: Bearer a"))
        var dropSignature = HostRule(pattern: "example.com")
        dropSignature.dropQuery = ["sig"]
        let dropping = RequestRulesHolder(HostRules(rules: [dropSignature]))
        let text = "https://example.com/a.png?sig=1"

        let plain = try ImageURL(text)
        let scoped = try ImageURL(text, keying: credentialed.current)
        let dropped = try ImageURL(text, keying: dropping.current)

        #expect(plain.credentialScope == nil)
        let scope = try #require(scoped.credentialScope)
        #expect(scoped.cacheKey == ImageURL.scopedKey(plain.cacheKey, scope: scope))
        #expect(dropped.credentialScope == nil)
        #expect(dropped.cacheKey == (try ImageURL("https://example.com/a.png")).cacheKey)
        #expect(Set([plain.cacheKey, scoped.cacheKey, dropped.cacheKey]).count == 3)
        #expect(credentialed.current.profile(for: "example.com").headers == ["Authorization: Bearer a"])
        #expect(dropping.current.profile(for: "example.com").headers.isEmpty)
        #expect(credentialed.current.credentialScopes == [scope])
        #expect(dropping.current.credentialScopes.isEmpty)
    }

    @Test("a request made before a reload keeps the rules it was made under; one made after takes the new ones")
    func requestKeepsItsSnapshot() throws {
        let fetcher = ManualFetcher()
        let holder = RequestRulesHolder(Self.sending("X-Key: old"))
        let repository = ImageRepository.forTests(fetcher: fetcher, adjust: { $0.rules = holder })
        let before = try ImageURL("https://example.com/a.png", keying: holder.current)
        _ = repository.prepare(before)

        holder.replace(with: Self.sending("X-Key: new"))
        let after = try ImageURL("https://example.com/b.png", keying: holder.current)
        _ = repository.prepare(after)

        let transfers = fetcher.transfers
        try #require(transfers.count == 2)
        #expect(transfers[0].request.rules.profile(for: "example.com").headers == ["X-Key: old"])
        #expect(transfers[1].request.rules.profile(for: "example.com").headers == ["X-Key: new"])
        // The name made before the reload keeps the key it was made with.
        #expect(transfers[0].url.cacheKey == before.cacheKey)
        #expect(before.credentialScope == RequestRules(Self.sending("X-Key: old")).credentialScope(for: "example.com"))
        #expect(after.credentialScope == holder.current.credentialScope(for: "example.com"))
        #expect(before.credentialScope != after.credentialScope)
    }

    @Test("a URL made from another for the same resource keeps its cache key")
    func derivedURLKeepsKey() throws {
        let rules = RequestRules(Self.sending("X-Key: a"))
        let url = try ImageURL("https://example.com/a.png#part", keying: rules)
        #expect(url.withoutFragment.cacheKey == url.cacheKey)
        #expect(url.markedBackground.cacheKey == url.cacheKey)
        #expect(url.withoutFragment.credentialScope == url.credentialScope)
    }
}
