import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import Testing

@Suite("Expiry at use")
struct ExpiryAtUseTests {
    private let fetched = Date(timeIntervalSince1970: 1_800_000_000)

    private func record(expiresAt: Date, validatedAt: Date? = nil, fromHeaders: Bool?) -> CacheRecord {
        CacheRecord(
            key: String(repeating: "a", count: 64), url: "http://h/a.png", size: 1, contentType: nil, etag: nil,
            lastModified: nil, fetchedAt: fetched, expiresAt: expiresAt, validatedAt: validatedAt,
            expiryFromHeaders: fromHeaders)
    }

    @Test("under the fixed lifetime, freshness is the last validation + the current lifetime, whatever was stored")
    func fixedLifetimeAtUse() {
        let policy = ExpiryPolicy(lifetime: 60)
        #expect(policy.expiry(of: record(expiresAt: fetched + 86400, fromHeaders: nil)) == fetched + 60)
        #expect(policy.expiry(of: record(expiresAt: fetched + 5, fromHeaders: true)) == fetched + 60)
        #expect(
            policy.expiry(of: record(expiresAt: fetched, validatedAt: fetched + 100, fromHeaders: false)) == fetched
                + 160)
    }

    @Test("under --cache-control, an expiry the headers set is kept; one that fell back to the lifetime is recomputed")
    func cacheControlAtUse() {
        let policy = ExpiryPolicy(lifetime: 60, honorsCacheControl: true)
        #expect(policy.expiry(of: record(expiresAt: fetched + 5, fromHeaders: true)) == fetched + 5)
        #expect(policy.expiry(of: record(expiresAt: fetched + 86400, fromHeaders: false)) == fetched + 60)
        #expect(
            policy.expiry(of: record(expiresAt: fetched + 86400, fromHeaders: nil)) == fetched + 86400, "older record")
    }

    @Test("a record written before the new fields decodes, with them nil")
    func oldRecordDecodes() throws {
        let new = record(expiresAt: fetched + 10, fromHeaders: true)
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(new)) as? [String: Any])
        object["validatedAt"] = nil
        object["expiryFromHeaders"] = nil
        let old = try JSONDecoder().decode(CacheRecord.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(old.validatedAt == nil && old.expiryFromHeaders == nil && old.lastValidated == fetched)
    }
}
