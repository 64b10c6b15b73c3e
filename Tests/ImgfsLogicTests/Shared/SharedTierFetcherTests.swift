import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Logging
import Testing

/// The shared tier's logic against a fake store and a hand-driven origin (the real Redis is in the integration tests).
@Suite("Shared tier logic")
struct SharedTierFetcherTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://images.example/a.png")
    }
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
        #expect(SharedTierRecord.decode(record.encoded(), url: "http://a/x.png") == nil, "complete without sha256")
        record.sha256 = String(repeating: "0f", count: 32)
        #expect(SharedTierRecord.decode(record.encoded(), url: "http://a/x.png") == record)
        #expect(SharedTierRecord.decode(record.encoded(), url: "http://a/y.png") == nil)
        #expect(SharedTierRecord.decode(Array("garbage".utf8), url: "http://a/x.png") == nil)
        let piece = SharedTierPiece.encode(index: 2, bytes: [1, 2, 3])
        #expect(SharedTierPiece.decode(piece[...], index: 2).map(Array.init) == [1, 2, 3])
        #expect(SharedTierPiece.decode(piece[...], index: 3) == nil)
        #expect(SharedTierPiece.decode((piece.dropLast() + [9])[...], index: 2) == nil)
    }

    @Test("a sealed value opens only under its fleet key and its own store key")
    func seals() {
        let seal = SharedTierSeal(key: Array("a fleet key of 24 bytes!".utf8))
        let value = seal.seal([1, 2, 3], key: "imgfs:v2:meta:a")
        #expect(seal.open(value, key: "imgfs:v2:meta:a").map(Array.init) == [1, 2, 3])
        #expect(seal.open(value, key: "imgfs:v2:meta:b") == nil, "moved to another key")
        #expect(SharedTierSeal(key: Array("another fleet key, 24 b.".utf8)).open(value, key: "imgfs:v2:meta:a") == nil)
        #expect(SharedTierSeal().open(value, key: "imgfs:v2:meta:a") == nil, "a mount without the key")
        var altered = value
        altered[1] ^= 1
        #expect(seal.open(altered, key: "imgfs:v2:meta:a") == nil)
        #expect(seal.open(Array(value.prefix(31)), key: "imgfs:v2:meta:a") == nil)
    }

    @Test("pieces sealed with the fleet key that do not make the recorded body fail the SHA-256 check and are dropped")
    func mixedWriters() throws {
        let seal = SharedTierSeal(key: Array("the one fleet key here".utf8))
        let keys = SharedTierKeys(url: url)
        // Another writer's piece 1 under A's fetch (its own CRC right, sealed with the key); or a record whose SHA-256
        // is not the pieces' (its CRC-32 is: only the SHA-256 tells).
        let damages: [(String, (FakeSharedStore) throws -> Void)] = [
            (
                "piece",
                { store in
                    for key in store.keys where key.contains(":piece:") && key.hasSuffix(":1") {
                        let piece = SharedTierPiece.encode(index: 1, bytes: Array(repeating: 9, count: 16))
                        store.put(key, seal.seal(piece, key: key))
                    }
                }
            ),
            (
                "sha256",
                { store in
                    let value = try #require(store.value(keys.meta))
                    let payload = try #require(seal.open(value, key: keys.meta))
                    var record = try #require(SharedTierRecord.decode(Array(payload), url: url.resourceKey))
                    record.sha256 = String(repeating: "ab", count: 32)
                    store.put(keys.meta, seal.seal(record.encoded(), key: keys.meta))
                }
            )
        ]
        for (name, damage) in damages {
            let store = FakeSharedStore()
            let originA = ManualFetcher()
            let a = tier(store, origin: originA) { $0.seal = seal }
            _ = fetch(a, respond: { $0.respond(body: Self.png) }, origin: originA)
            #expect(Poll.until(timeout: 10, interval: 0.002) { a.counters.published == 1 })
            try damage(store)
            let damaged = store.value(keys.meta)
            let originB = ManualFetcher()
            let b = tier(store, origin: originB) { $0.seal = seal }
            let second = fetch(b, respond: { $0.respond(body: Self.png) }, origin: originB)
            let bytes = second.completeBytes?.copyBytes(offset: 0, count: Self.png.count)
            // The origin is asked: when the bytes streamed were not its own the transfer fails (never cached); when
            // they were, it completes with them.
            #expect(originB.transfers.count == 1, "\(name)")
            #expect(bytes == (name == "piece" ? nil : Self.png), "\(name)")
            #expect(b.counters.rejected >= 1, "\(name)")
            #expect(b.counters.hits == 0, "\(name)")
            #expect(store.value(keys.meta) != damaged, "\(name): the record whose pieces do not make its body is gone")
        }
    }

    @Test("a lease not sealed with the fleet key is not followed: the origin at once, counted")
    func forgedLease() {
        let store = FakeSharedStore()
        store.put(SharedTierKeys(url: url).lease, Array("0123-abcd".utf8))
        let origin = ManualFetcher()
        let seal = SharedTierSeal(key: Array("the one fleet key here".utf8))
        let fetcher = tier(store, origin: origin) { $0.seal = seal }
        let download = fetch(fetcher, respond: { $0.respond(body: Self.png) }, origin: origin)
        #expect(origin.transfers.count == 1)
        #expect(download.completeBytes?.copyBytes(offset: 0, count: Self.png.count) == Self.png)
        #expect(fetcher.counters.rejected == 1)
        #expect(fetcher.counters.followed == 0)
    }

    @Test("values sealed with another fleet key are ignored, counted, and the origin asked")
    func foreignFleetKey() {
        let store = FakeSharedStore()
        let originA = ManualFetcher()
        let a = tier(store, origin: originA) { $0.seal = SharedTierSeal(key: Array("fleet key number one".utf8)) }
        _ = fetch(a, respond: { $0.respond(body: Self.png) }, origin: originA)
        #expect(Poll.until(timeout: 10, interval: 0.002) { a.counters.published == 1 })
        let originB = ManualFetcher()
        let b = tier(store, origin: originB) { $0.seal = SharedTierSeal(key: Array("fleet key number two".utf8)) }
        let second = fetch(b, respond: { $0.respond(body: Self.png) }, origin: originB)
        #expect(originB.transfers.count == 1)
        #expect(second.completeBytes?.copyBytes(offset: 0, count: Self.png.count) == Self.png)
        #expect(b.counters.rejected >= 1)
        #expect(b.counters.hits == 0)
    }
}

extension Download.Phase {
    fileprivate var failure: FetchError? {
        if case .failed(let error, _) = self { return error }
        return nil
    }
}
