import Foundation
import Synchronization
import Testing

@testable import ImgfsModel
@testable import ImgfsPipeline
@testable import ImgfsStore

@Suite("Disk cache: small bodies and their records in one entry file")
struct DiskCacheEntryFileTests {
    typealias Fixture = DiskCacheFixture

    static let limit = 64 << 10

    func open(_ fixture: Fixture, durable: Bool = false, limit: Int = Self.limit) throws -> DiskCache {
        try fixture.open(durable: durable, singleFileLimit: limit)
    }

    /// Stores `bodies` under `urls` in one batch of `cache`.
    func storeBatch(_ cache: DiskCache, _ urls: [String], _ bodies: [[UInt8]]) -> [Result<CacheRecord, any Error>] {
        let joined = bodies.flatMap { $0 }
        return joined.withUnsafeBytes { all in
            var offset = 0
            return cache.store(
                batch: zip(urls, bodies).map { url, body in
                    defer { offset += body.count }
                    return (Fixture.record(url), UnsafeRawBufferPointer(rebasing: all[offset..<offset + body.count]))
                })
        }
    }

    @Test("a small body is one entry file: the body, then its record; read back, also after a restart")
    func oneFile() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let body = Fixture.body(3_000, seed: 5)
        let large = Fixture.body(Self.limit + 1, seed: 6)
        let stored: CacheRecord
        let storedLarge: CacheRecord
        do {
            let cache = try open(fixture, durable: true)
            stored = try cache.store(Fixture.record("https://example.com/small"), body: body)
            storedLarge = try cache.store(Fixture.record("https://example.com/large"), body: large)
        }
        let entryFile = fixture.entryFile(for: stored.key, checksum: stored.checksum, size: body.count)
        #expect(
            fixture.files()
                == [
                    "\(stored.key.prefix(2))/" + entryFile.lastPathComponent,
                    "\(storedLarge.key.prefix(2))/\(storedLarge.key).meta",
                    "\(storedLarge.key.prefix(2))/\(storedLarge.key)."
                        + DiskCacheLayout.hex(storedLarge.checksum) + ".data"
                ].sorted())
        let bytes = [UInt8](try Data(contentsOf: entryFile))
        #expect(Array(bytes.prefix(body.count)) == body)
        #expect(try CacheRecordParser.decode(Array(bytes.dropFirst(body.count))) == stored)
        let cache = try open(fixture)
        #expect(cache.count == 2)
        #expect(cache.totalBytes == body.count + large.count)
        #expect(cache.record(forKey: stored.key)?.url == stored.url)
        #expect(try cache.readAll(key: stored.key) == body)
        #expect(try cache.read(key: stored.key, offset: 2_990, count: 100) == Array(body.suffix(10)))
        #expect(try cache.readAll(key: storedLarge.key) == large)
        let file = try #require(try cache.openBody(key: stored.key))
        #expect(file.size == body.count && !file.isWholeFile, "never handed to the kernel whole")
        #expect(KernelReadableBody(file, size: body.count) == nil)
    }

    @Test("an update rewrites the entry file with the same body; replacing moves between the two kinds of files")
    func updateAndReplace() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let url = "https://example.com/x"
        let small = Fixture.body(2_000, seed: 1)
        let cache = try open(fixture, durable: true)
        let stored = try cache.store(Fixture.record(url), body: small)
        var renewed = Fixture.record(url, etag: "\"v2\"")
        renewed.expiresAt = Date(timeIntervalSinceNow: 7_200)
        try cache.update(renewed)
        let entryFile = fixture.entryFile(for: stored.key, checksum: stored.checksum, size: small.count)
        let bytes = [UInt8](try Data(contentsOf: entryFile))
        #expect(Array(bytes.prefix(small.count)) == small)
        #expect(try CacheRecordParser.decode(Array(bytes.dropFirst(small.count))).etag == "\"v2\"")
        #expect(fixture.files().count == 1)
        #expect(try open(fixture).record(forKey: stored.key)?.etag == "\"v2\"")

        let large = Fixture.body(Self.limit * 2, seed: 2)
        let storedLarge = try cache.store(Fixture.record(url), body: large)
        #expect(
            fixture.files().map { String($0.dropFirst(3)) }.sorted()
                == ["\(stored.key).meta", "\(stored.key).\(DiskCacheLayout.hex(storedLarge.checksum)).data"].sorted())
        let smaller = Fixture.body(900, seed: 3)
        let last = try cache.store(Fixture.record(url), body: smaller)
        #expect(
            fixture.files() == [
                "\(stored.key.prefix(2))/"
                    + fixture.entryFile(for: stored.key, checksum: last.checksum, size: 900).lastPathComponent
            ])
        #expect(try open(fixture).readAll(key: stored.key) == smaller)
    }

    @Test(
        "a damaged entry file is corrupt on its first read or lookup, and removed",
        arguments: ["flip", "cut into the body", "cut into the record", "garbage record", "wrong key"])
    func corruption(damage: String) throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let body = Fixture.body(20_000, seed: 9)
        let (stored, intact) = try {
            let cache = try open(fixture)
            return (
                try cache.store(Fixture.record("https://example.com/damaged"), body: body),
                try cache.store(Fixture.record("https://example.com/intact"), body: body)
            )
        }()
        let file = fixture.entryFile(for: stored.key, checksum: stored.checksum, size: body.count)
        let bytes = [UInt8](try Data(contentsOf: file))
        switch damage {
        case "flip": try fixture.write(bytes.enumerated().map { $0 == 12_345 ? $1 ^ 4 : $1 }, to: file)
        case "cut into the body": try fixture.write(Array(bytes.prefix(19_000)), to: file)
        case "cut into the record": try fixture.write(Array(bytes.prefix(body.count + 10)), to: file)
        case "garbage record": try fixture.write(body + Array("not json".utf8), to: file)
        default:
            let other = [UInt8](
                try Data(contentsOf: fixture.entryFile(for: intact.key, checksum: intact.checksum, size: body.count)))
            try fixture.write(other, to: file)
        }
        let cache = try open(fixture)
        if damage == "cut into the body" {
            #expect(cache.count == 1, "a file shorter than its body is not an entry")
        } else if damage == "flip" {
            #expect(throws: DiskCacheError.corrupt(stored.key)) { try cache.read(key: stored.key, offset: 0, count: 9) }
        } else {
            #expect(cache.record(forKey: stored.key) == nil)
        }
        #expect(throws: DiskCacheError.notFound(stored.key)) { try cache.readAll(key: stored.key) }
        #expect(cache.count == 1)
        #expect(!fixture.files().contains { $0.contains(stored.key) })
        #expect(try cache.readAll(key: intact.key) == body)
    }

    @Test("a key left with two complete entries by a crash keeps the one renamed last, whatever their kinds")
    func interruptedReplacement() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let url = "https://example.com/replaced"
        let older = Fixture.body(1_000, seed: 1)
        let newer = Fixture.body(1_200, seed: 2)
        for (oldKind, newKind) in [("pair", "entry"), ("entry", "pair"), ("entry", "entry")] {
            let (key, oldFiles, newFiles) = try {
                let oldCache = try open(fixture, limit: oldKind == "entry" ? Self.limit : -1)
                let key = try oldCache.store(Fixture.record(url), body: older).key
                let oldFiles = fixture.files()
                let saved = try oldFiles.map { ($0, try Data(contentsOf: fixture.root.appendingPathComponent($0))) }
                try open(fixture, limit: newKind == "entry" ? Self.limit : -1).store(Fixture.record(url), body: newer)
                let newFiles = fixture.files()
                // The old files back, as if the crash came before their removal; the new ones are touched after.
                for (name, data) in saved where !newFiles.contains(name) {
                    try data.write(to: fixture.root.appendingPathComponent(name))
                }
                return (key, oldFiles, newFiles)
            }()
            #expect(oldFiles != newFiles, "\(oldKind) → \(newKind)")
            Thread.sleep(forTimeInterval: 0.05)  // past the file system's timestamp granularity
            for name in newFiles {
                let path = fixture.root.appendingPathComponent(name).path
                try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
            }
            let cache = try open(fixture)
            #expect(try cache.readAll(key: key) == newer, "\(oldKind) → \(newKind)")
            #expect(fixture.files() == newFiles, "\(oldKind) → \(newKind)")
            try cache.remove(key: key)
        }
    }

    @Test("a cache written before entry files (small bodies as data files) is read and replaced as usual")
    func olderLayout() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let body = Fixture.body(700, seed: 4)
        let stored = try open(fixture, limit: -1).store(Fixture.record("https://example.com/old"), body: body)
        let cache = try open(fixture)
        #expect(try cache.readAll(key: stored.key) == body)
        try cache.update(Fixture.record("https://example.com/old", etag: "\"v9\""))
        #expect(fixture.files().contains { $0.hasSuffix(".meta") }, "an update keeps the entry's kind")
        try cache.store(Fixture.record("https://example.com/old"), body: body)
        #expect(fixture.files().count == 1 && fixture.files()[0].hasSuffix(".entry"))
        #expect(try open(fixture).readAll(key: stored.key) == body)
    }

    @Test("an entry file whose write fails in a batch leaves the others stored and its old entry as it was")
    func batchFailure() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let failing = "https://example.com/failing.png"
        let oldBody = Fixture.body(1_000, seed: 5)
        let armed = Mutex(false)
        let cache = try fixture.open(
            durable: true,
            writeFault: { path in armed.withLock { $0 } && path.contains(Fixture.key(failing)) ? EIO : nil },
            singleFileLimit: Self.limit)
        try cache.store(Fixture.record(failing), body: oldBody)
        armed.withLock { $0 = true }
        let bodies = [Fixture.body(800, seed: 6), Fixture.body(900, seed: 7), Fixture.body(600, seed: 8)]
        let urls = ["https://example.com/first.png", failing, "https://example.com/last.png"]
        let results = storeBatch(cache, urls, bodies)
        #expect((try? results[0].get()) != nil && (try? results[2].get()) != nil)
        #expect((try? results[1].get()) == nil)
        #expect(try cache.readAll(key: Fixture.key(failing)) == oldBody, "the old entry stays")
        #expect(fixture.files().count == 3 && fixture.files().allSatisfy { $0.hasSuffix(".entry") })
        let reopened = try open(fixture)
        for (url, body) in zip(urls, [bodies[0], oldBody, bodies[2]]) {
            #expect(try reopened.readAll(key: Fixture.key(url)) == body)
        }
    }

    @Test("a batch commits small bodies as entry files beside data files, and the last use survives a restart")
    func batchAndUse() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let clock = DiskCacheTestClock(Date(timeIntervalSinceNow: -86_400))
        let bodies = [Fixture.body(500, seed: 1), Fixture.body(Self.limit + 10, seed: 2), Fixture.body(800, seed: 3)]
        let urls = bodies.indices.map { "https://example.com/\($0)" }
        do {
            let cache = try fixture.open(durable: true, now: { clock.now }, singleFileLimit: Self.limit)
            let results = storeBatch(cache, urls, bodies)
            #expect(results.allSatisfy { (try? $0.get()) != nil })
            #expect(fixture.files().filter { $0.hasSuffix(".entry") }.count == 2)
            #expect(fixture.files().count == 4)
            clock.advance(3_600)
            cache.touch(key: Fixture.key(urls[0]))
        }
        let cache = try fixture.open(now: { clock.now }, singleFileLimit: Self.limit)
        for (url, body) in zip(urls, bodies) { #expect(try cache.readAll(key: Fixture.key(url)) == body) }
        let record = try #require(cache.record(forKey: Fixture.key(urls[0])))
        #expect(
            abs(record.lastAccess.timeIntervalSince(clock.now)) < 0.01, "the entry file's modification time kept it")
    }
}
