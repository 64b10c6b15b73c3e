import Foundation
import ImgfsFilesystem
import ImgfsModel
import Testing

/// Lists read from their mapped files: the stored form of every earlier version loads as it did (comments, blank lines
/// and lines without a tab skipped, the first of a repeated name found), and every name of a large list is found at
/// its position.
@Suite("List storage")
struct ListStorageTests {
    @Test("a hand-edited v1 file: comments, blanks, lines without a tab, repeated names, no final newline")
    func storedForm() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let text =
            "# imgfs list v1\n\na.png\thttps://x.org/a.png\nno tab here\n# b\tcomment\n"
            + "b.png\thttps://x.org/b.png?q=1\tmore\na.png\thttps://x.org/other.png\nc.png\thttps://x.org/c.png"
        try text.write(to: directory.appendingPathComponent("old.list"), atomically: true, encoding: .utf8)
        let list = try #require(ListStore(directory: directory).list("old"))
        #expect(list.entries.map(\.name) == ["a.png", "b.png", "a.png", "c.png"])
        #expect(
            list.entries.map(\.urlText) == [
                "https://x.org/a.png", "https://x.org/b.png?q=1\tmore", "https://x.org/other.png", "https://x.org/c.png"
            ])
        #expect(list.index(of: "a.png") == 0 && list.index(of: "c.png") == 3 && list.index(of: "d.png") == nil)
        #expect(list.index(of: "") == nil && list.name(at: 1) == "b.png")
        #expect(ImageList(name: "old", storedText: text).entries == list.entries)
    }

    @Test("names and URLs read on bytes: their hashes are those of the entry's texts, invalid UTF-8 included")
    func hashesOnBytes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var bytes = Array("# imgfs list v1\na.png\thttps://x.org/a.png\nb\u{e9}.png\thttps://x.org/\u{e9}.png\n".utf8)
        bytes += Array("c.png\thttps://x.org/".utf8) + [0xC3, 0x28, 0xFF] + Array(".png\n".utf8)
        try Data(bytes).write(to: directory.appendingPathComponent("raw.list"))
        let list = try #require(ListStore(directory: directory).list("raw"))
        #expect(list.entries.count == 3)
        for (position, entry) in list.entries.enumerated() {
            #expect(list.urlHash(at: position) == EntryFacts.hash(entry.urlText), "\(entry.urlText)")
            let (name, hash) = list.nameAndHash(at: position)
            #expect(name == entry.name && name == list.name(at: position))
            #expect(
                list.nameAndHash(at: position).hash == hash && hash != list.nameAndHash(at: (position + 1) % 3).hash)
        }
    }

    @Test("200,000 entries: every name found at its position, an empty file is an empty list")
    func large() throws {
        let entries = (0..<200_000).map {
            ImageList.Entry(name: "\($0)-n.png", url: try! ImageURL("https://x.org/\($0).png"))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storage-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ListStore(directory: directory)
        try store.save(ImageList(name: "big", entries: entries))
        let list = try #require(store.list("big"))
        #expect(list.entries.count == 200_000)
        for position in stride(from: 0, to: 200_000, by: 997) {
            #expect(list.index(of: "\(position)-n.png") == position)
            #expect(list.entries[position] == entries[position])
        }
        try Data().write(to: directory.appendingPathComponent("empty.list"))
        #expect(store.list("empty")?.entries.isEmpty == true)
    }
}
