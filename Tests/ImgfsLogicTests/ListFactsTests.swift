import Foundation
import ImgfsFilesystem
import ImgfsModel
import Testing

/// ``EntryFacts`` records, ``ListFacts`` files and ``ListIndex`` lines: facts come back only for the URL they were
/// written for, hostile records never trap nor give out-of-range values, facts move with their URLs when a list is
/// replaced, and every index line is JSON with the same keys.
@Suite("List facts")
struct ListFactsTests {
    typealias Generator = NamePropertyTests.Generator

    static let header = ImageHeader(format: .jpeg, width: 4000, height: 3000, orientation: 6)
    static let modified = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("a record round-trips, and answers only for its own URL")
    func roundTrip() {
        let facts = EntryFacts(size: 123_456, header: Self.header, modified: Self.modified, etag: "\"abc\"")
        let record = facts.encoded(urlText: "https://a.example/x.jpg")
        #expect(record.count == EntryFacts.recordSize)
        #expect(EntryFacts(record: record, urlText: "https://a.example/x.jpg") == facts)
        #expect(EntryFacts(record: record, urlText: "https://a.example/y.jpg") == nil)
        #expect(EntryFacts(record: [UInt8](repeating: 0, count: EntryFacts.recordSize), urlText: "") == nil)
        let failed = EntryFacts(failure: "HTTP 500 Internal Server Error from https://a.example/some/long/path")
        let back = EntryFacts(record: failed.encoded(urlText: "u"), urlText: "u")
        #expect(back?.status == .failed && back?.size == nil)
        #expect(back?.reason == "HTTP 500 Internal Server Error from htt")
        // An ETag too long to keep is dropped, not cut.
        #expect(EntryFacts(size: 1, header: nil, modified: nil, etag: String(repeating: "e", count: 49)).etag == nil)
    }

    @Test("hostile records (property): random and extreme bytes never trap and stay in range")
    func hostileRecords() {
        var generator = Generator(state: 128)
        let url = "https://a.example/x.jpg"
        let base = EntryFacts(size: 1, header: Self.header, modified: Self.modified, etag: "e").encoded(urlText: url)
        for round in 0..<20_000 {
            var record = round % 2 == 0 ? base : (0..<128).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 1 { record.replaceSubrange(0..<8, with: base[0..<8]) }
            for _ in 0..<Int.random(in: 0...12, using: &generator) {
                let at = Int.random(in: 8..<record.count, using: &generator)
                record[at] = [0, 0xFF, 0x7F, 0x80, UInt8.random(in: 0...255, using: &generator)].randomElement(
                    using: &generator)!
            }
            guard let facts = EntryFacts(record: record, urlText: url) else { continue }
            if let size = facts.size { #expect(size >= 0) }
            #expect((facts.width == nil) == (facts.height == nil))
            if let orientation = facts.orientation { #expect((1...8).contains(orientation)) }
            if let modified = facts.modified { #expect(PlausibleDate.contains(modified)) }
            #expect((facts.etag?.utf8.count ?? 0) <= EntryFacts.etagLimit)
        }
        #expect(EntryFacts(record: Array(base.prefix(100)), urlText: url) == nil)
    }

    @Test("a facts file: written at positions, read back after reopening; a replaced list keeps its URLs' facts")
    func file() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("facts-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ListStore(directory: directory, writesFacts: true)
        let urls = try (0..<5).map { try ImageURL("https://a.example/\($0).png") }
        let list = ImageList(
            name: "l", entries: urls.enumerated().map { .init(name: "\($0.offset).png", url: $0.element) })
        try store.save(list)
        let facts = try #require(store.listWithFacts("l")?.facts)
        let known = EntryFacts(
            size: 77, header: ImageHeader(format: .png, width: 3, height: 2), modified: nil, etag: nil)
        #expect(facts.record(known, at: 3, urlText: urls[3].string))
        #expect(
            ListStore(directory: directory).listWithFacts("l")?.facts?.facts(at: 3, urlText: urls[3].string) == known)
        #expect(facts.facts(at: 2, urlText: urls[2].string) == nil)
        #expect(facts.facts(at: 1_000_000, urlText: urls[2].string) == nil)
        // Replaced: the URL moves to position 0; the facts follow it.
        let replaced = ImageList(
            name: "l", entries: [.init(name: "a.png", url: urls[3]), .init(name: "b.png", url: urls[0])])
        try store.save(replaced)
        let reread = try #require(ListStore(directory: directory).listWithFacts("l", recheck: true))
        #expect(reread.facts?.facts(at: 0, urlText: urls[3].string) == known)
        #expect(reread.facts?.facts(at: 1, urlText: urls[0].string) == nil)
        let lines = String(decoding: ListIndex.render(reread.list, facts: reread.facts), as: UTF8.self)
            .split(separator: "\n")
        #expect(lines.count == 2)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["name"] as? String == "a.png" && first["size"] as? Int == 77 && first["width"] as? Int == 3)
        #expect(first["format"] as? String == "png" && first["status"] as? String == "ok")
        let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(second["status"] as? String == "unknown" && second["size"] is NSNull && second.count == 9)
        #expect(try store.remove("l"))
        #expect(!FileManager.default.fileExists(atPath: ListFacts.path(of: "l", in: directory)))
    }

    @Test("index lines escape quotes, backslashes and control characters")
    func escaping() throws {
        let entry = ImageList.Entry(name: "a\"b\\c\u{1}.png", url: try ImageURL("https://a.example/q?x=\"1\""))
        let line = ListIndex.line(entry, facts: EntryFacts(failure: "tab\there"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["name"] as? String == "a\"b\\c\u{1}.png")
        #expect(object["status"] as? String == "failed" && object["reason"] as? String == "tab\there")
    }
}
