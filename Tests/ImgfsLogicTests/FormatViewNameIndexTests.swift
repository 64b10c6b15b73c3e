import ImgfsFilesystem
import ImgfsPipeline
import Testing

/// ``FormatViewNameIndex``: every entry has one name under a format view whose extension is the view's, no two the
/// same, read back both ways, whatever the entries are called.
@Suite("Format view names")
struct FormatViewNameIndexTests {
    @Test("the view's extension kept, another image extension replaced, else added")
    func rule() {
        let cases: [(String, VariantFormat, String)] = [
            ("00001-green-photo.avif", .jpeg, "00001-green-photo.jpg"),
            ("00002-photo.png", .jpeg, "00002-photo.jpg"),
            ("00003-photo.JPEG", .jpeg, "00003-photo.JPEG"),
            ("00004-photo.jpg", .png, "00004-photo.png"),
            ("00005-drawing.svg", .png, "00005-drawing.png"),
            ("00006-grüne Wiese", .jpeg, "00006-grüne Wiese.jpg"),
            ("00007-v1.2", .png, "00007-v1.2.png"),
            ("00008-page.php", .jpeg, "00008-page.php.jpg"),
            (".hidden.png", .jpeg, ".hidden.jpg"),
            (".png", .jpeg, ".png.jpg"),
            ("x.", .jpeg, "x..jpg")
        ]
        for (entry, format, expected) in cases {
            #expect(FormatViewNameIndex.names(of: [entry], format: format).viewNames == [expected], "\(entry)")
        }
    }

    @Test("collisions: a kept name first, then the first claimant; the others their whole name, then a number")
    func collisions() {
        let entries = ["a.png", "a.avif", "a", "a.jpg", "a.png.jpg", "a.avif.jpg", "a.avif-2.jpg", "b"]
        let names = FormatViewNameIndex.names(of: entries, format: .jpeg)
        #expect(
            names.viewNames == [
                "a.png-2.jpg", "a.avif-3.jpg", "a-2.jpg", "a.jpg", "a.png.jpg", "a.avif.jpg", "a.avif-2.jpg", "b.jpg"
            ], "an entry that has the view's name already keeps it")
        #expect(Set(names.viewNames).count == entries.count, "\(names.viewNames)")
        for (entry, name) in zip(entries, names.viewNames) {
            #expect(names.entryByViewName[name] == entry)
            #expect(name.lowercased().hasSuffix(".jpg"), "\(name)")
        }
        #expect(names.viewNames.last == "b.jpg")
    }

    @Test("many colliding and hostile names: distinct, read back both ways, each with the view's extension")
    func hostile() {
        var entries: [String] = []
        for i in 0..<300 {
            entries.append("n.png" + String(repeating: ".png", count: i % 3))
            entries.append("n-\(i % 5).jpg")
            entries.append("n\(i).avif")
            entries.append(String(repeating: ".", count: i % 7 + 1) + "\(i)")
            entries.append("\u{0}\u{FFFF}\(i).JPG.png")
        }
        var seen = Set<String>()
        entries = entries.filter { seen.insert($0).inserted }
        for format in [VariantFormat.jpeg, .png] {
            let names = FormatViewNameIndex.names(of: entries, format: format)
            #expect(names.viewNames.count == entries.count)
            #expect(Set(names.viewNames).count == entries.count)
            #expect(names.entryByViewName.count == entries.count)
            for (entry, name) in zip(entries, names.viewNames) {
                #expect(names.entryByViewName[name] == entry)
                let ext = name.split(separator: ".").last.map { $0.lowercased() }
                #expect(ext.flatMap { VariantFormat(fileExtension: $0) } == format, "\(name)")
            }
            #expect(FormatViewNameIndex.names(of: entries, format: format).viewNames == names.viewNames)
        }
    }
}
