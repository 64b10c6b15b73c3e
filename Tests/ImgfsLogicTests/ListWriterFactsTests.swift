import Foundation
import ImgfsFilesystem
import ImgfsModel
import Testing

/// `ListStore.write` over a list that has a facts file: the facts of the entries carried move with them, and a list
/// written with none carried replaces it too (its new facts file is never made: nothing moved into it).
@Suite("List writer and facts files")
struct ListWriterFactsTests {
    @Test("written again over a facts file: carried facts follow their entries; with none carried the write succeeds")
    func factsFileWithNothingCarried() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ListStore(directory: directory, writesFacts: true)
        let urls = try (0..<3).map { try ImageURL("https://a.example/\($0)") }
        try store.write("l") { writer in
            for (index, url) in urls.enumerated() { try writer.append(name: "\(index)", urlText: url.string) }
        }
        let facts = try #require(store.listWithFacts("l", recheck: true)?.facts)
        let known = EntryFacts(
            size: 77, header: ImageHeader(format: .png, width: 3, height: 2), modified: nil, etag: nil)
        #expect(facts.record(known, at: 1, urlText: urls[1].string))
        let path = ListFacts.path(of: "l", in: directory)
        #expect(FileManager.default.fileExists(atPath: path))
        // The same rows again, each carrying its own position's facts (list add's names found by a probe).
        try store.write("l") { writer in
            for (index, url) in urls.enumerated() {
                try writer.append(name: "\(index).png", urlText: url.string, previous: index)
            }
        }
        let again = try #require(ListStore(directory: directory).listWithFacts("l"))
        #expect(again.list.entries.map(\.name) == ["0.png", "1.png", "2.png"])
        #expect(again.facts?.facts(at: 1, urlText: urls[1].string) == known)
        // Written once more with no position given: nothing is carried, the old facts file goes.
        try store.write("l") { writer in
            for (index, url) in urls.enumerated() { try writer.append(name: "n\(index)", urlText: url.string) }
        }
        let fresh = try #require(ListStore(directory: directory).listWithFacts("l"))
        #expect(fresh.list.entries.map(\.name) == ["n0", "n1", "n2"])
        #expect(fresh.facts?.facts(at: 1, urlText: urls[1].string) == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
