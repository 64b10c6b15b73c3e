import Foundation
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Disk cache: interrupted writes, corruption, write errors")
struct DiskCacheCrashTests {
    @Test("leftovers of interrupted writes are ignored and removed; the old entry survives")
    func leftovers() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let old = DiskCacheFixture.record("https://example.com/old.png")
        let oldBody = DiskCacheFixture.body(3_000, seed: 3)
        do { _ = try fixture.open().store(old, body: oldBody) }
        let key = old.key
        let newBody = DiskCacheFixture.body(4_000, seed: 4)
        let newChecksum = CRC32.checksum(newBody)
        // A replacement interrupted after its body was committed, before its record: a second data file.
        try fixture.write(newBody, to: fixture.dataFile(for: key, checksum: newChecksum))
        // Temporary files of writes interrupted before their rename, one of them half written.
        let subdirectory = fixture.subdirectory(for: key)
        try fixture.write(
            Array(newBody.prefix(100)), to: subdirectory.appendingPathComponent(key + ".0123456789abcdef.tmp"))
        try fixture.write([], to: subdirectory.appendingPathComponent(key + ".fedcba9876543210.tmp"))
        // A new entry whose body was committed but not its record, and a record whose body never arrived.
        let orphanKey = DiskCacheFixture.key("https://example.com/orphan")
        try fixture.write(newBody, to: fixture.dataFile(for: orphanKey, checksum: newChecksum))
        let lonelyKey = DiskCacheFixture.key("https://example.com/lonely")
        try fixture.write(Array(#"{"key":"x"}"#.utf8), to: fixture.metaFile(for: lonelyKey))
        // A body in the wrong subdirectory (copied by hand).
        let misplaced = fixture.root.appendingPathComponent(key.hasPrefix("00") ? "01" : "00")
            .appendingPathComponent(key + "." + DiskCacheLayout.hex(newChecksum) + ".data")
        try fixture.write(newBody, to: misplaced)
        // Someone else's file is left alone.
        let foreign = subdirectory.appendingPathComponent("README")
        try fixture.write([1], to: foreign)

        let cache = try fixture.open()
        #expect(cache.count == 1)
        #expect(cache.totalBytes == 3_000)
        #expect(try cache.readAll(key: key) == oldBody)
        #expect(
            fixture.files().sorted()
                == [
                    "\(key.prefix(2))/\(key).\(DiskCacheLayout.hex(CRC32.checksum(oldBody))).data",
                    "\(key.prefix(2))/\(key).meta",
                    "\(key.prefix(2))/README"
                ].sorted())
    }

    @Test("a second live instance leaves young leftovers alone")
    func sharedDirectory() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let first = try fixture.open()
        let key = DiskCacheFixture.key("https://example.com/x")
        let young = fixture.subdirectory(for: key).appendingPathComponent(key + ".0000000000000001.tmp")
        let old = fixture.subdirectory(for: key).appendingPathComponent(key + ".0000000000000002.tmp")
        try fixture.write([1], to: young)
        try fixture.write([1], to: old, modified: Date(timeIntervalSinceNow: -3600))
        _ = try fixture.open()
        #expect(FileManager.default.fileExists(atPath: young.path))
        #expect(!FileManager.default.fileExists(atPath: old.path))
        withExtendedLifetime(first) {}
    }

    @Test(
        "a flipped byte, a truncated body, a missing body or a mismatching record is corrupt on first read",
        arguments: ["flip", "truncate", "extend", "delete", "wrong key", "garbage record"])
    func corruption(damage: String) throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let damaged = DiskCacheFixture.record("https://example.com/damaged")
        let intact = DiskCacheFixture.record("https://example.com/intact")
        let body = DiskCacheFixture.body(50_000, seed: 9)
        var stored = damaged
        do {
            let cache = try fixture.open()
            stored = try cache.store(damaged, body: body)
            try cache.store(intact, body: body)
        }
        let dataFile = fixture.dataFile(for: stored.key, checksum: stored.checksum)
        var bytes = [UInt8](try Data(contentsOf: dataFile))
        switch damage {
        case "flip": bytes[31_337] ^= 0x10; try fixture.write(bytes, to: dataFile)
        case "truncate": try fixture.write(Array(bytes.prefix(49_999)), to: dataFile)
        case "extend": try fixture.write(bytes + [0], to: dataFile)
        case "delete": try FileManager.default.removeItem(at: dataFile)
        case "wrong key":
            // The record of another entry copied under this name.
            let other = try Data(contentsOf: fixture.metaFile(for: intact.key))
            try other.write(to: fixture.metaFile(for: stored.key))
        default: try fixture.write(Array("not json".utf8), to: fixture.metaFile(for: stored.key))
        }
        let cache = try fixture.open()
        if damage == "delete" {
            #expect(cache.count == 1, "a record without its body is not an entry")
        } else {
            #expect(throws: DiskCacheError.corrupt(stored.key)) {
                try cache.read(key: stored.key, offset: 10, count: 10)
            }
        }
        #expect(cache.record(forKey: stored.key) == nil)
        #expect(throws: DiskCacheError.notFound(stored.key)) { try cache.readAll(key: stored.key) }
        #expect(cache.count == 1)
        #expect(!fixture.files().contains { $0.contains(stored.key) })
        #expect(try cache.readAll(key: intact.key) == body)
    }

    @Test("a body damaged after it was verified is caught when a read comes up short")
    func truncatedLater() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let cache = try fixture.open()
        let record = try cache.store(
            DiskCacheFixture.record("https://example.com/t"), body: DiskCacheFixture.body(1_000))
        try fixture.write(DiskCacheFixture.body(500), to: fixture.dataFile(for: record.key, checksum: record.checksum))
        #expect(
            try cache.read(key: record.key, offset: 0, count: 100).count == 100, "verified at store: not read again")
        #expect(throws: DiskCacheError.corrupt(record.key)) { try cache.read(key: record.key, offset: 900, count: 100) }
        #expect(cache.count == 0)
    }

    @Test(
        "a failing write throws a typed error, leaves no partial file and keeps the old entry",
        arguments: [(ENOSPC, "data"), (EIO, "data"), (ENOSPC, "meta"), (EDQUOT, "meta")])
    func writeFailure(code: Int32, failing: String) throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let record = DiskCacheFixture.record("https://example.com/full")
        let oldBody = DiskCacheFixture.body(1_000, seed: 1)
        do { _ = try fixture.open().store(record, body: oldBody) }
        let filesBefore = fixture.files()
        let cache = try fixture.open(writeFault: { path in path.hasSuffix("." + failing) ? code : nil })
        let expected: DiskCacheError = code == EIO ? .io("") : .noSpace
        do {
            try cache.store(record, body: DiskCacheFixture.body(100_000, seed: 2))
            Issue.record("the store should have failed")
        } catch let error as DiskCacheError {
            if case .io = expected, case .io = error {} else { #expect(error == expected) }
        }
        #expect(fixture.files() == filesBefore)
        #expect(cache.count == 1)
        #expect(try cache.readAll(key: record.key) == oldBody)
        #expect(throws: DiskCacheError.self) {
            try cache.store(DiskCacheFixture.record("https://example.com/new"), body: [1, 2, 3])
        }
        #expect(fixture.files() == filesBefore)
        #expect(try fixture.open().readAll(key: record.key) == oldBody)
    }
}
