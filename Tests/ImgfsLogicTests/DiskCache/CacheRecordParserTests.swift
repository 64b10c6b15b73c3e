import Foundation
import Testing

@testable import ImgfsModel
@testable import ImgfsStore

@Suite("Disk cache: reading records without JSONDecoder")
struct CacheRecordParserTests {
    /// Encoded as DiskCache writes records.
    private static func encoded(_ record: CacheRecord) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(record))
    }

    private static func decodedByFoundation(_ bytes: [UInt8]) throws -> CacheRecord {
        try JSONDecoder().decode(CacheRecord.self, from: Data(bytes))
    }

    private static func randomRecord(_ generator: inout SystemRandomNumberGenerator) -> CacheRecord {
        func date() -> Date {
            Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...2e9, using: &generator))
        }
        let texts = ["", "image/png", "W/\"abc\"", "a\\b/c\td\ne", "ünïcödé €", "\"quoted\"", "x y"]
        func text() -> String { texts.randomElement(using: &generator)! }
        func maybe<T>(_ value: T) -> T? { Bool.random(using: &generator) ? value : nil }
        return CacheRecord(
            key: String(repeating: "ab", count: 32), url: "https://example.com/\(text())?q=1&r=/x",
            size: Int.random(in: 0...(1 << 40), using: &generator), contentType: maybe(text()), etag: maybe(text()),
            lastModified: maybe(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...900_000_000)))),
            fetchedAt: date(), expiresAt: date(), checksum: UInt32.random(in: 0...UInt32.max, using: &generator),
            lastAccess: date(), validatedAt: maybe(date()), expiryFromHeaders: maybe(Bool.random(using: &generator)),
            remoteAddress: maybe("::1"))
    }

    @Test("every record JSONEncoder writes is read as JSONDecoder reads it, dates to the bit")
    func sameAsFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        var parsedByIt = 0
        for _ in 0..<2000 {
            let record = Self.randomRecord(&generator)
            let bytes = try Self.encoded(record)
            let foundation = try Self.decodedByFoundation(bytes)
            if let parsed = CacheRecordParser.parse(bytes) {
                parsedByIt += 1
                #expect(parsed == foundation)
                #expect(
                    parsed.fetchedAt.timeIntervalSinceReferenceDate.bitPattern
                        == foundation.fetchedAt.timeIntervalSinceReferenceDate.bitPattern)
            }
            #expect(try CacheRecordParser.decode(bytes) == foundation)
        }
        // Only strings JSONEncoder escapes with \u are left to JSONDecoder; none of these records has one.
        #expect(parsedByIt == 2000)
    }

    @Test("what it does not expect is left to JSONDecoder: \\u escapes, nesting, bad numbers, wrong types, junk")
    func leavesTheRestToFoundation() throws {
        let valid = try Self.encoded(
            CacheRecord(
                key: String(repeating: "0", count: 64), url: "http://h/a.png", size: 12, contentType: "image/png",
                etag: nil, lastModified: nil, fetchedAt: Date(timeIntervalSinceReferenceDate: 1.5),
                expiresAt: Date(timeIntervalSinceReferenceDate: 2.25), checksum: 7,
                lastAccess: Date(timeIntervalSinceReferenceDate: 3)))
        let text = String(decoding: valid, as: UTF8.self)
        #expect(CacheRecordParser.parse(valid) != nil)
        #expect(text.contains("image\\/png"))  // JSONEncoder escapes "/"
        let refused = [
            text.replacingOccurrences(of: "image\\/png", with: "image\\u002Fpng"),  // valid JSON, \u escape
            text.replacingOccurrences(of: "\"size\":12", with: "\"size\":12.5"),  // not an integer
            text.replacingOccurrences(of: "\"size\":12", with: "\"size\":012"),  // not JSON
            text.replacingOccurrences(of: "\"size\":12", with: "\"size\":\"12\""),  // a string for a number
            text.replacingOccurrences(of: "\"checksum\":7", with: "\"checksum\":-7"),  // out of UInt32
            text.replacingOccurrences(of: "\"size\":12", with: "\"size\":{\"a\":1}"),  // nested
            text.replacingOccurrences(of: "\"key\":", with: "\"kee\":"),  // a required key missing
            text + "x",  // trailing bytes
            String(text.dropLast()),  // truncated
            "", "{", "[]", "null"
        ]
        for variant in refused {
            let bytes = Array(variant.utf8)
            #expect(CacheRecordParser.parse(bytes) == nil, "\(variant)")
            // decode() then answers as JSONDecoder does: the same record or the same refusal.
            let foundation = try? Self.decodedByFoundation(bytes)
            #expect((try? CacheRecordParser.decode(bytes)) == foundation, "\(variant)")
        }
        // Unknown keys and null optionals are read, as JSONDecoder reads them.
        let extended = Array(
            text.replacingOccurrences(of: "{", with: "{\"future\":\"field\",\"etag\":null,").utf8)
        #expect(CacheRecordParser.parse(extended) == (try Self.decodedByFoundation(extended)))
    }
}
