import Foundation
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Disk cache: startup speed")
struct DiskCacheStartupTests {
    static let entryCount = 100_000

    @Test("opening a cache of 100,000 entries lists files only and is fast")
    func startup() throws {
        let fixture = try DiskCacheFixture()
        defer { fixture.remove() }
        let body = Array("sixteen bytes!!!".utf8)
        let keys = try Self.writeEntries(Self.entryCount, body: body, in: fixture)
        let clock = ContinuousClock()
        var cache: DiskCache?
        let elapsed = try clock.measure { cache = try fixture.open() }
        let opened = try #require(cache)
        print("disk cache startup with \(Self.entryCount) entries: \(elapsed)")
        #expect(elapsed < .seconds(5))
        #expect(opened.count == Self.entryCount)
        #expect(opened.totalBytes == Self.entryCount * body.count)
        #expect(opened.keys() == keys.sorted())
        #expect(opened.record(forKey: keys[12_345])?.url == "https://example.com/12345")
        #expect(try opened.readAll(key: keys[99_999]) == body)
    }

    /// Writes `count` entries with `body` directly in the layout (records as `store` would write them) and returns
    /// their keys. Uses system calls for speed in debug builds.
    static func writeEntries(_ count: Int, body: [UInt8], in fixture: DiskCacheFixture) throws -> [String] {
        let checksum = CRC32.checksum(body)
        let placeholder = String(repeating: "a", count: 64)
        var template = DiskCacheFixture.record("URL", size: body.count)
        template.key = placeholder
        template.checksum = checksum
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(template), as: UTF8.self)
        let parts = json.components(separatedBy: placeholder).flatMap { $0.components(separatedBy: "\"URL\"") }
        try #require(parts.count == 3)
        let root = fixture.root.path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for index in 0..<256 { mkdir(root + "/" + DiskCacheLayout.hex(UInt8(index)), 0o700) }
        var keys: [String] = []
        keys.reserveCapacity(count)
        var state: UInt64 = 0x1234_5678
        for index in 0..<count {
            var key = ""
            for _ in 0..<4 { key += DiskCacheLayout.hex(Self.splitMix(&state)) }
            keys.append(key)
            let base = root + "/" + key.prefix(2) + "/" + key
            let meta = parts[0] + key + parts[1] + "\"https:\\/\\/example.com\\/\(index)\"" + parts[2]
            try Self.write(Array(meta.utf8), to: base + ".meta")
            try Self.write(body, to: base + "." + DiskCacheLayout.hex(checksum) + ".data")
        }
        return keys
    }

    private static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
