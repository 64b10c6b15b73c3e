import Foundation
import ImgfsFilesystem
import Testing

@testable import imgfs

/// `imgfs list add`'s streaming pass: read in small pieces, every format gives the rows and the problem line numbers a
/// parse of the whole text gives, quoted line breaks and headers survive piece boundaries, and gzip is read as it
/// comes (a stream cut short fails the read).
@Suite("List rows in pieces")
struct ListRowsTests {
    static func rows(
        _ text: [UInt8], name: String, pieceSize: Int, format: ListFormat? = nil
    ) throws -> (urls: [String], names: [String?], problems: [Int]) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rows-\(UUID())-\(name)").path
        FileManager.default.createFile(atPath: path, contents: Data(text))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var reader = ListRows(source: path, format: format, columns: .init())
        reader.pieceSize = pieceSize
        var urls: [String] = []
        var names: [String?] = []
        var problems: [Int] = []
        try reader.read(
            {
                urls.append($0.url.string); names.append($0.givenName)
            }, problem: { problems.append($0.line) })
        return (urls, names, problems)
    }

    @Test("text, CSV, TSV and JSON Lines in pieces of 7 to 4096 bytes: the same as one whole parse")
    func samePieces() throws {
        var csv = "\u{FEFF}url,name\r\n"
        var tsv = "name\turl\n"
        var jsonl = ""
        var text = "# comment\n"
        for index in 0..<300 {
            let url = "https://a.example/p/\(index).png"
            if index % 37 == 5 {
                csv += "not a url,\"bad \"\"quoted\"\"\nname\"\r\n"
                tsv += "x\t\n"
                jsonl += "{broken\n"
                text += "ftp://nope/\(index)\n"
            } else {
                csv += "\(url),\"name, \(index)\nsecond line\"\r\n"
                tsv += "n\(index)\t\(url)\n"
                jsonl += "{\"url\": \"\(url)\", \"name\": \"j\\\"\(index)\"}\n"
                text += "\(url)\tt\(index)\n"
            }
        }
        for (body, name, format) in [
            (csv, "a.csv", ListFormat.csv), (tsv, "a.tsv", .tsv), (jsonl, "a.jsonl", .jsonl), (text, "a.txt", .text)
        ] {
            let whole = try ListText.parse(body, format: format)
            for size in [7, 64, 100, 333, 4096] {
                let pieces = try Self.rows(Array(body.utf8), name: name, pieceSize: size)
                #expect(pieces.urls == whole.lines.map(\.url.string), "\(name) in pieces of \(size)")
                #expect(pieces.names == whole.lines.map(\.givenName), "\(name) in pieces of \(size)")
                #expect(pieces.problems == whole.problems.map(\.line), "\(name) in pieces of \(size)")
            }
            #expect(whole.lines.count > 250 && whole.problems.count >= 8, "\(name)")
        }
    }

    @Test("gzip is decompressed as it is read; a stream cut short fails")
    func gzip() throws {
        let text = (0..<2000).map { "https://a.example/\($0).jpg\n" }.joined()
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("rows-\(UUID()).txt").path
        try text.write(toFile: plain, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: plain + ".gz") }
        let process = try Process.run(URL(fileURLWithPath: "/bin/gzip"), arguments: [plain])
        process.waitUntilExit()
        let compressed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: plain + ".gz")))
        let rows = try Self.rows(compressed, name: "list.txt.gz", pieceSize: 512)
        #expect(rows.urls.count == 2000 && rows.urls.last == "https://a.example/1999.jpg")
        #expect(throws: ListRows.Unreadable.self) {
            try Self.rows(Array(compressed.prefix(compressed.count / 2)), name: "cut.txt.gz", pieceSize: 512)
        }
    }
}
