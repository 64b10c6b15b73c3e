import ImgfsFilesystem
import ImgfsModel
import Testing

/// Lists as data sets (issue 37): CSV, TSV and JSON Lines, their formats told apart, bad rows named by line.
@Suite("List data sets")
struct ListDatasetTests {
    @Test("CSV: quoted fields with commas, quotes and line breaks, a BOM, CRLF; the URL and name columns by header")
    func csv() throws {
        let text =
            "\u{FEFF}id,URL,Name\r\n1,http://a/x.png,\"Cover, big\"\r\n2,\"http://a/y.png\",\"say \"\"hi\"\"\"\r\n"
            + "3,,empty\r\n4,not a url,bad\r\n5,http://a/z.png,\"two\nlines\"\r\n6\r\n\r\n"
        let (lines, problems) = try ListText.parse(text, format: .csv)
        #expect(lines.map(\.url.string) == ["http://a/x.png", "http://a/y.png", "http://a/z.png"])
        #expect(lines.map(\.givenName) == ["Cover, big", "say \"hi\"", "two\nlines"])
        #expect(problems.map(\.line) == [4, 5, 8], "\(problems)")
    }

    @Test("TSV and JSON Lines; columns named by option; a missing URL column refuses the table")
    func tsvAndJSONLines() throws {
        let tsv = "name\tlink\nfirst\thttp://a/1.png\nsecond\t\n"
        let (lines, problems) = try ListText.parse(tsv, format: .tsv, columns: .init(url: "link"))
        #expect(lines.map(\.url.string) == ["http://a/1.png"] && lines[0].givenName == "first")
        #expect(problems.map(\.line) == [3])
        #expect(throws: ListText.Unreadable.self) { try ListText.parse(tsv, format: .tsv) }
        #expect(throws: ListText.Unreadable.self) {
            try ListText.parse(tsv, format: .tsv, columns: .init(url: "link", name: "title"))
        }
        let jsonl = """
            {"url": "http://a/1.png", "name": "one"}
            {"url": 5}
            not json
            {"src": "http://a/2.png"}

            {"url": "http://a/3.png", "extra": [1, 2]}
            """
        let parsed = try ListText.parse(jsonl, format: .jsonl)
        #expect(parsed.lines.map(\.url.string) == ["http://a/1.png", "http://a/3.png"])
        #expect(parsed.lines.map(\.givenName) == ["one", nil])
        #expect(parsed.problems.map(\.line) == [2, 3, 4])
        #expect(try ListText.parse(jsonl, format: .jsonl, columns: .init(url: "src")).lines.count == 1)
    }

    @Test("the format follows the file's name, else the first line")
    func formats() {
        #expect(ListFormat.named(by: "urls.CSV") == .csv)
        #expect(ListFormat.named(by: "a/b.tsv.gz") == .tsv)
        #expect(ListFormat.named(by: "x.ndjson") == .jsonl)
        #expect(ListFormat.named(by: "urls.txt") == nil)
        #expect(ListFormat.sniff("\n  {\"url\": \"http://a/1.png\"}\n") == .jsonl)
        #expect(ListFormat.sniff("\u{FEFF}id,url\n1,http://a/1.png\n") == .csv)
        #expect(ListFormat.sniff("\"url\"\t\"name\"\n") == .tsv)
        #expect(ListFormat.sniff("http://a/1.png\nhttp://a/2.png\n") == .text)
        #expect(ListFormat.sniff("link,name\n", urlColumn: "link") == .csv)
    }

    @Test("random text never breaks the table parser: every record's line is in the text, lines never go back")
    func tableProperty() {
        var generator = NamePropertyTests.Generator(state: 37)
        let alphabet: [Unicode.Scalar] = ["a", ",", "\"", "\n", "\r", "\t", " ", "\u{FEFF}", "é", "0"]
        for _ in 0..<3000 {
            let count = Int.random(in: 0...200, using: &generator)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<count { scalars.append(alphabet.randomElement(using: &generator)!) }
            let text = String(scalars)
            let lineCount = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).count
            var last = 0
            for separator in [",", "\t"] as [Unicode.Scalar] {
                last = 0
                for record in ListTable(text, separator: separator) {
                    #expect(record.line >= last && record.line <= max(1, lineCount + 1))
                    last = record.line
                }
            }
            for format in ListFormat.allCases {
                _ = try? ListText.parse(text, format: format)
            }
        }
    }
}
