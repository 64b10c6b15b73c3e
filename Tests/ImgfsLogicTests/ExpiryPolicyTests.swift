import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Expiry policy")
struct ExpiryPolicyTests {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func head(_ cacheControl: String? = nil, expires: String? = nil) -> ResponseHead {
        var head = ResponseHead(status: 200)
        if let cacheControl { head.apply(headerLine: "Cache-Control: \(cacheControl)") }
        if let expires { head.apply(headerLine: "Expires: \(expires)") }
        head.date = now
        return head
    }

    @Test("by default a fixed lifetime, whatever the origin says")
    func fixedLifetime() {
        let policy = ExpiryPolicy(lifetime: 600)
        #expect(policy.decide(for: head("no-store"), now: now) == .init(store: true, expiresAt: now + 600))
    }

    @Test("with Cache-Control honoured: no-store, no-cache, max-age, Expires")
    func cacheControl() {
        let policy = ExpiryPolicy(lifetime: 600, honorsCacheControl: true)
        #expect(
            policy.decide(for: head("no-store"), now: now) == .init(store: false, expiresAt: now, fromHeaders: true))
        #expect(policy.decide(for: head("no-cache"), now: now) == .init(store: true, expiresAt: now, fromHeaders: true))
        #expect(
            policy.decide(for: head("public, max-age=0"), now: now)
                == .init(store: true, expiresAt: now, fromHeaders: true))
        #expect(
            policy.decide(for: head("max-age=\"120\""), now: now)
                == .init(store: true, expiresAt: now + 120, fromHeaders: true))
        #expect(
            policy.decide(for: head(expires: HTTPDate.format(now + 300)), now: now)
                == .init(store: true, expiresAt: now + 300, fromHeaders: true))
        #expect(
            policy.decide(for: head(expires: "0"), now: now) == .init(store: true, expiresAt: now, fromHeaders: true))
        #expect(policy.decide(for: head(), now: now) == .init(store: true, expiresAt: now + 600))
    }
}
