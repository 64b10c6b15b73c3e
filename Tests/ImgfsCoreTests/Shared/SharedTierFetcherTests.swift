import Foundation
import ImgfsCore
import Logging
import ImgfsTestSupport
import Testing

/// The shared tier's logic against a fake store and a hand-driven origin (the real Redis is in the integration tests).
@Suite("Shared tier logic")
struct SharedTierFetcherTests {
    private let url = try! ImageURL("http://images.example/a.png")
    private static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 40)

    private func tier(
        _ store: FakeSharedStore, origin: ManualFetcher, pieceSize: Int = 16,
        configure: (inout SharedTierConfiguration) -> Void = { _ in },
        resolve: @escaping @Sendable (String) -> [NetworkAddress]? = { _ in nil }
    ) -> SharedTierFetcher {
        var configuration = SharedTierConfiguration()
        configuration.pieceSize = pieceSize
        configuration.pollMinimum = 0.001
        configure(&configuration)
        return SharedTierFetcher(
            origin: origin, store: store, configuration: configuration,
            logger: Logger(label: "test"), resolve: resolve)
    }

    /// Fetches `url` through `fetcher` into a Download; returns it once it ended.
    private func fetch(
        _ fetcher: any ImageFetching, respond: ((ManualFetcher) -> Void)? = nil,
        origin: ManualFetcher
    ) -> Download {
        let download = Download(url: url)
        download.attach(fetcher.start(FetchRequest(url: url), observer: download))
        if let respond {
            _ = Poll.until(timeout: 10, interval: 0.002) { !origin.transfers.isEmpty }
            respond(origin)
        }
        _ = Poll.until(timeout: 10, interval: 0.002) {
            download.phase != .waitingForHead && download.phase != .receiving
        }
        return download
    }

    @Test("a body fetched by one mount is published in pieces and served to the next without the origin")
    func publishesAndServes() {
        let store = FakeSharedStore()
        let originA = ManualFetcher()
        let a = tier(store, origin: originA)
        let first = fetch(a, respond: { $0.respond(body: Self.png) }, origin: originA)
        #expect(first.completeBytes?.copyBytes(offset: 0, count: Self.png.count) == Self.png)
        let keys = SharedTierKeys(url: url)
        #expect(Poll.until(timeout: 10, interval: 0.002) { store.value(keys.meta) != nil })
        #expect(store.keys.filter { $0.contains(":piece:") }.count == 3, "48 bytes in 16-byte pieces")
        #expect(store.value(keys.lease) == nil, "the lease is released")
        #expect(servedByStoreAlone(store))
    }

    /// Whether a fresh mount on `store` gets the image without starting an origin transfer.
    private func servedByStoreAlone(_ store: FakeSharedStore) -> Bool {
        let origin = ManualFetcher()
        let download = fetch(tier(store, origin: origin), origin: origin)
        let bytes = download.completeBytes?.copyBytes(offset: 0, count: Self.png.count)
        return bytes == Self.png && origin.transfers.isEmpty
    }

    @Test("a corrupt piece is ignored and the body fetched from the origin again")
    func corruptPiece() {
        let store = FakeSharedStore()
        let originA = ManualFetcher()
        _ = fetch(tier(store, origin: originA), respond: { $0.respond(body: Self.png) }, origin: originA)
        let keys = SharedTierKeys(url: url)
        #expect(Poll.until(timeout: 10, interval: 0.002) { store.value(keys.meta) != nil })
        for key in store.keys where key.contains(":piece:") && key.hasSuffix(":1") {
            var value = store.value(key)!
            value[value.count - 1] ^= 0xff
            store.put(key, value)
        }
        let originB = ManualFetcher()
        let b = tier(store, origin: originB)
        let second = fetch(b, respond: { $0.respond(body: Self.png) }, origin: originB)
        #expect(originB.transfers.count == 1)
        #expect(second.completeBytes?.copyBytes(offset: 0, count: Self.png.count) == Self.png)
        #expect(b.counters.rejected >= 1)
        // B published its body over the corrupt one: the next mount reads it without the origin.
        #expect(Poll.until(timeout: 10, interval: 0.002) { b.counters.published == 1 })
        #expect(servedByStoreAlone(store))
    }

    @Test("a store that fails sends transfers to the origin, and counts it")
    func storeDown() {
        let store = FakeSharedStore()
        store.failing = .unavailable("connection refused")
        let origin = ManualFetcher()
        let fetcher = tier(store, origin: origin)
        let download = fetch(fetcher, respond: { $0.respond(body: Self.png) }, origin: origin)
        #expect(download.completeBytes != nil)
        #expect(fetcher.counters.outages == 1 && fetcher.counters.up == 0)
        // While down (and not due for a probe), the store is not asked at all.
        let calls = store.callCount
        _ = fetch(fetcher, respond: { $0.respond(1, body: Self.png) }, origin: origin)
        #expect(store.callCount == calls)
    }

    @Test("with --deny-private-networks the store is used only for hosts that resolve to public addresses")
    func denyPrivateNetworks() {
        let store = FakeSharedStore()
        let origin = ManualFetcher()
        let policy = AddressPolicy(denyPrivateNetworks: true)
        let fetcher = tier(
            store, origin: origin, configure: { $0.addressPolicy = policy },
            resolve: { _ in [NetworkAddress("10.0.0.7")!] })
        _ = fetch(fetcher, respond: { $0.respond(body: Self.png) }, origin: origin)
        #expect(store.callCount == 0, "a host on a private network must not be served from the store")
        #expect(origin.transfers.count == 1)
    }

    @Test("no-store bodies and revalidations never touch the store")
    func noStoreAndConditional() {
        let store = FakeSharedStore()
        let origin = ManualFetcher()
        let fetcher = tier(store, origin: origin, configure: { $0.expiry = ExpiryPolicy(honorsCacheControl: true) })
        _ = fetch(fetcher, respond: { $0.respond(body: Self.png, cacheControl: "no-store") }, origin: origin)
        #expect(Poll.until(timeout: 10, interval: 0.002) { store.value(SharedTierKeys(url: url).lease) == nil })
        #expect(!store.keys.contains { $0.contains(":meta:") || $0.contains(":piece:") })
        let calls = store.callCount
        let download = Download(url: url)
        download.attach(fetcher.start(FetchRequest(url: url, etag: "\"v1\""), observer: download))
        #expect(store.callCount == calls && origin.transfers.count == 2)
    }

    @Test("a body the mount's own checks refuse (not an image) is never published")
    func refusedBodyNotShared() {
        let store = FakeSharedStore()
        let origin = ManualFetcher()
        let html = Array("<html><body>not found</body></html>".utf8) + Array(repeating: 0x20, count: 64)
        let download = fetch(tier(store, origin: origin), respond: { $0.respond(body: html) }, origin: origin)
        #expect(download.phase.failure.map { if case .notAnImage = $0 { true } else { false } } == true)
        #expect(Poll.until(timeout: 10, interval: 0.002) { store.value(SharedTierKeys(url: url).lease) == nil })
        #expect(!store.keys.contains { $0.contains(":meta:") || $0.contains(":piece:") }, "\(store.keys)")
    }

    @Test("cache-only reads the store and never the origin")
    func storeOnly() {
        let store = FakeSharedStore()
        let origin = ManualFetcher()
        let fetcher = tier(store, origin: origin)
        let download = fetch(fetcher.storeOnly, origin: origin)
        #expect(download.phase.failure == .notCached)
        #expect(origin.transfers.isEmpty)
    }

    @Test("addresses: redis://[[user]:password@]host[:port][/db], and clear errors")
    func addresses() throws {
        #expect(
            try SharedCacheAddress(parsing: "redis://cache.internal:6380/2")
                == SharedCacheAddress(host: "cache.internal", port: 6380, database: 2))
        #expect(
            try SharedCacheAddress(parsing: "redis://:s%40cret@10.0.0.5")
                == SharedCacheAddress(host: "10.0.0.5", password: "s@cret"))
        #expect(try SharedCacheAddress(parsing: "redis://fleet:pw@[::1]:7000").host == "::1")
        #expect(try SharedCacheAddress(parsing: "redis://:pw@h:1/0").description == "redis://h:1/0")
        for bad in ["http://h", "redis://", "redis://h:0", "redis://h:x", "redis://h/db", "redis://[::1"] {
            #expect(throws: SharedCacheAddressError.self, "\(bad)") { try SharedCacheAddress(parsing: bad) }
        }
    }

    @Test("records and pieces that are foreign or damaged are recognised")
    func records() {
        let head = ResponseHead(status: 200, contentLength: 3, contentType: "image/png")
        // Whole seconds: the record keeps dates to the millisecond.
        let expiresAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 60).rounded())
        var record = SharedTierRecord(
            url: "http://a/x.png", fetch: "f1", head: head, expiresAt: expiresAt,
            pieceSize: 16)
        record.size = 3
        #expect(SharedTierRecord.decode(record.encoded(), url: "http://a/x.png") == record)
        #expect(SharedTierRecord.decode(record.encoded(), url: "http://a/y.png") == nil)
        #expect(SharedTierRecord.decode(Array("garbage".utf8), url: "http://a/x.png") == nil)
        let piece = SharedTierPiece.encode(index: 2, bytes: [1, 2, 3])
        #expect(SharedTierPiece.decode(piece, index: 2).map(Array.init) == [1, 2, 3])
        #expect(SharedTierPiece.decode(piece, index: 3) == nil)
        #expect(SharedTierPiece.decode(piece.dropLast() + [9], index: 2) == nil)
    }
}

private extension Download.Phase {
    var failure: FetchError? {
        if case .failed(let error, _) = self { return error }
        return nil
    }
}
