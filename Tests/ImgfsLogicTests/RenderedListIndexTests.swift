import Foundation
import ImgfsModel
import Testing

@testable import ImgfsFilesystem

/// ``RenderedListIndex``: a list's `.index.jsonl` is rendered again only when the list or what its facts know changed.
@Suite("Rendered list index")
struct RenderedListIndexTests {
    @Test("kept while nothing changed; a record through the list's facts or a replaced list renders again")
    func keptUntilChanged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("index-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ListStore(directory: directory, writesFacts: true)
        let urls = try (0..<3).map { try ImageURL("https://a.example/\($0).png") }
        try store.save(
            ImageList(name: "l", entries: urls.enumerated().map { .init(name: "\($0.offset).png", url: $0.element) }))
        let (list, facts) = try #require(store.listWithFacts("l"))
        let rendered = RenderedListIndex()
        let unknown = rendered.size(list, facts: facts)
        #expect(unknown == ListIndex.render(list, facts: facts).count)
        let known = EntryFacts(
            size: 123_456, header: ImageHeader(format: .png, width: 300, height: 200), modified: nil, etag: nil)
        // Another object writing the same file is not seen (the rendering is kept: it was not rendered again)...
        #expect(
            ListFacts(path: ListFacts.path(of: "l", in: directory), writable: true).record(
                known, at: 0, urlText: urls[0].string))
        #expect(rendered.size(list, facts: facts) == unknown)
        #expect(rendered.content(list, facts: facts).count == unknown)
        // ... a record through the list's own facts is.
        #expect(facts?.record(known, at: 1, urlText: urls[1].string) == true)
        let both = ListIndex.render(list, facts: facts)
        #expect(both.count != unknown)
        #expect(rendered.size(list, facts: facts) == both.count)
        #expect(rendered.content(list, facts: facts) == both)
        // A list replaced under the same name renders again.
        try store.save(ImageList(name: "l", entries: [.init(name: "only.png", url: urls[2])]))
        let (replaced, replacedFacts) = try #require(store.listWithFacts("l", recheck: true))
        #expect(rendered.content(replaced, facts: replacedFacts) == ListIndex.render(replaced, facts: replacedFacts))
        #expect(String(decoding: rendered.content(replaced, facts: replacedFacts), as: UTF8.self).contains("only.png"))
    }
}
