import Foundation
import ImgfsCore
import Testing

@Suite("Memory cache")
struct MemoryCacheTests {
    private func image(_ name: String, size: Int) -> CachedImage {
        CachedImage(url: try! ImageURL("http://127.0.0.1/\(name)"), bytes: ImageBytes(copying: [UInt8](repeating: 1, count: size)),
                    metadata: ImageMetadata(size: size), expiresAt: .distantFuture)
    }

    @Test("stays within its budget, dropping the least recently used first")
    func budget() {
        let cache = MemoryCache(budget: 1000)
        for index in 0..<10 { cache.insert(image("\(index)", size: 300), forKey: "\(index)") }
        #expect(cache.totalBytes <= 1000)
        #expect(cache.count == 3)
        #expect(cache.keys.sorted() == ["7", "8", "9"])
        _ = cache.image(forKey: "7")
        cache.insert(image("10", size: 300), forKey: "10")
        #expect(cache.keys.sorted() == ["10", "7", "9"], "7 was used, so 8 went")
        #expect(cache.counters.evictions == 8)
        #expect(!cache.insert(image("huge", size: 2000), forKey: "huge"))
        #expect(cache.peek("huge") == nil)
    }

    @Test("a purge empties it while a reader keeps its bytes")
    func purgeKeepsReadersBytes() {
        let cache = MemoryCache(budget: 1 << 20)
        cache.insert(image("a", size: 1000), forKey: "a")
        let held = cache.image(forKey: "a")!
        #expect(cache.purge() == 1000)
        #expect(cache.totalBytes == 0 && cache.count == 0)
        #expect(held.bytes.copyBytes() == [UInt8](repeating: 1, count: 1000))
        #expect(cache.counters.purges == 1)
    }
}

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
        #expect(policy.decide(for: head("no-store"), now: now) == .init(store: false, expiresAt: now))
        #expect(policy.decide(for: head("no-cache"), now: now) == .init(store: true, expiresAt: now))
        #expect(policy.decide(for: head("public, max-age=0"), now: now) == .init(store: true, expiresAt: now))
        #expect(policy.decide(for: head("max-age=\"120\""), now: now) == .init(store: true, expiresAt: now + 120))
        #expect(policy.decide(for: head(expires: HTTPDate.format(now + 300)), now: now) == .init(store: true, expiresAt: now + 300))
        #expect(policy.decide(for: head(expires: "0"), now: now) == .init(store: true, expiresAt: now))
        #expect(policy.decide(for: head(), now: now) == .init(store: true, expiresAt: now + 600))
    }
}

@Suite("Quantities")
struct QuantityTests {
    @Test("sizes take K, M, G suffixes in powers of 1024")
    func sizes() {
        #expect(Quantity.bytes("512") == 512)
        #expect(Quantity.bytes("64K") == 64 << 10)
        #expect(Quantity.bytes("64M") == 64 << 20)
        #expect(Quantity.bytes("1G") == 1 << 30)
        #expect(Quantity.bytes("1.5GiB") == 3 << 29)
        #expect(Quantity.bytes("10MB") == 10 << 20)
        #expect(Quantity.bytes("lots") == nil)
        #expect(Quantity.bytes("5X") == nil)
    }

    @Test("durations take s, m, h, d")
    func durations() {
        #expect(Quantity.seconds("90") == 90)
        #expect(Quantity.seconds("30m") == 1800)
        #expect(Quantity.seconds("24h") == 86400)
        #expect(Quantity.seconds("7d") == 604800)
        #expect(Quantity.seconds("1.5s") == 1.5)
        #expect(Quantity.seconds("soon") == nil)
    }
}

@Suite("HTTP dates")
struct HTTPDateTests {
    @Test("IMF-fixdate parses by hand, the obsolete forms still parse, and format round-trips")
    func dates() throws {
        let reference = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == reference)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == reference)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == reference)
        #expect(HTTPDate.format(reference) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds in stride(from: 0, to: 4_000_000_000, by: 97_654_321) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
        #expect(HTTPDate.parse("0") == nil)
    }
}
