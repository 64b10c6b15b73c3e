import Foundation
import ImgfsFilesystem
import ImgfsModel
import Testing

@Suite("List entry names")
struct EntryNamerTests {
    private func url(_ text: String) throws -> ImageURL { try ImageURL(text) }

    @Test("index, sanitized last segment, extension from the URL, else from what is known, else none")
    func shapes() throws {
        #expect(
            EntryNamer.name(index: 41, count: 100, url: try url("https://x.org/a/green%20photo.JPG?s=1"))
                == "00042-green-photo.jpg")
        #expect(
            EntryNamer.name(index: 0, count: 3, url: try url("https://x.org/raw/thing"), knownExtension: "png")
                == "00001-thing.png")
        #expect(EntryNamer.name(index: 0, count: 3, url: try url("https://x.org/raw/thing")) == "00001-thing")
        #expect(EntryNamer.name(index: 0, count: 3, url: try url("https://x.org/")) == "00001")
        #expect(EntryNamer.name(index: 9, count: 123_456, url: try url("https://x.org/p.gif")) == "000010-p.gif")
        #expect(
            EntryNamer.name(index: 0, count: 1, url: try url("https://x.org/p.png"), given: "Cover Image")
                == "00001-Cover-Image.png")
        #expect(
            EntryNamer.name(index: 0, count: 1, url: try url("https://x.org/..%2F..%2Fetc%0Apasswd"))
                == "00001-etc-passwd")
    }

    @Test("names are valid UTF-8, at most 255 bytes, without '/', control characters or a leading dot")
    func properties() throws {
        let long = String(repeating: "é", count: 400)
        let hostile = ["/a/\(long).png", "/.hidden", "/%00%01%1F", "/%E2%80%AE.png", "/a%2Fb", "/\(long)"]
        for path in hostile {
            let name = EntryNamer.name(index: 0, count: 1, url: try url("https://x.org\(path)"))
            #expect(name.utf8.count <= 255, "\(name)")
            #expect(!name.hasPrefix(".") && !name.contains("/"), "\(name)")
            #expect(!name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7f }, "\(name)")
            #expect(String(validating: Array(name.utf8), as: UTF8.self) == name)
        }
    }
}

@Suite("List text and store")
struct ListTextTests {
    @Test("comments, blank lines, CRLF, URL<TAB>name; invalid lines reported with their numbers; duplicates kept")
    func parse() {
        let text =
            "# c\r\nhttps://a.org/1.png\r\n\r\nnot a url\nhttps://a.org/2.png\tTwo\nhttps://a.org/1.png\nftp://x/y\n"
        let (lines, problems) = ListText.parse(text)
        #expect(lines.map(\.url.string) == ["https://a.org/1.png", "https://a.org/2.png", "https://a.org/1.png"])
        #expect(lines.map(\.givenName) == [nil, "Two", nil])
        #expect(problems.map(\.line) == [4, 7])
    }

    @Test("list names: '/', '..', NUL, control characters, leading dots and more than 200 bytes are refused")
    func names() {
        for bad in ["", "a/b", "..", ".", ".x", "a\u{0}b", "a\nb", String(repeating: "x", count: 201)] {
            #expect(throws: ListStore.InvalidName.self) { try ListStore.validate(bad) }
        }
        #expect(throws: Never.self) { try ListStore.validate(String(repeating: "é", count: 100)) }
    }

    @Test("a stored list reads back the same and is replaced whole")
    func store() throws {
        let directory = URL(fileURLWithPath: "/tmp/imgfs-liststore-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = ListStore(directory: directory)
        let list = ImageList(name: "a", entries: [.init(name: "00001-x.png", url: try ImageURL("https://a.org/x.png"))])
        try store.save(list)
        #expect(store.list("a")?.entries == list.entries)
        #expect(store.list("a")?.index(of: "00001-x.png") == 0)
        #expect(store.names() == ["a"])
        let empty = ImageList(name: "a", entries: [])
        try ListStore(directory: directory).save(empty)
        #expect(store.list("a", recheck: true)?.entries == [])
        #expect(try store.remove("a") && store.list("a", recheck: true) == nil)
    }
}
