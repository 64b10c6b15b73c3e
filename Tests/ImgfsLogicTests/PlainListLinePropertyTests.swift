import ImgfsFilesystem
import ImgfsModel
import Testing

/// The byte-level reading of plain-text lists (`imgfs list add` of millions of URLs) against the String path it
/// stands in for: thousands of seeded random lines, extreme lengths and ports; a line read on its bytes is accepted,
/// named and typed exactly as ``ListText``, ``ImageURL``, ``EntryNamer`` and ``ImageExtension`` do.
@Suite("Plain list lines (fuzz)")
struct PlainListLinePropertyTests {
    /// SplitMix64: a small seeded generator, so a failure can be replayed.
    typealias Generator = NamePropertyTests.Generator

    static let schemes = ["http://", "https://", "HTTP://", "http:/", "ftp://", "", "https:", "http://http://"]
    static let hosts = [
        "a.example", "127.0.0.1", "", "a:b@c", "h:0", "h:1", "h:65535", "h:65536", "h:00080", "h:123456", "h:",
        ":80", "[::1]", "[::1]:8080", "h<", "bücher.example", "h^x", "h.png", "H.JPEG", "h:8a", "h:-1", "x.y:443"
    ]
    static let pieces = [
        "/", "a", "Z", "0", ".", "png", "PNG", "jpg", ".jpeg", ".Tiff", "%", "%2F", "%C3%A9", "?", "#", "-", "_", "~",
        "..", "//", "x.webp", "=", "&", ":", "@", "+", "!", "$", "'", "(", ")", "*", ",", ";", "[", "]"
    ]
    /// Bytes no plain line holds; drawn rarely.
    static let rare = [" ", "\t", "\r", "é", "\u{7f}", "\u{0}", "\u{2028}", "\u{85}", "\"", "{", "|", "\\", "^", "`"]

    static func randomLine(_ generator: inout Generator) -> String {
        // Mostly a plain scheme and host, so that both paths are taken often.
        let common = Int.random(in: 0..<4, using: &generator) != 0
        let scheme =
            common
            ? ["http://", "https://"].randomElement(using: &generator)! : schemes.randomElement(using: &generator)!
        let host =
            common
            ? ["a.example", "h:8080", "10.0.0.1"].randomElement(using: &generator)!
            : hosts.randomElement(using: &generator)!
        var line = scheme + host
        let length = Int.random(in: 0...40, using: &generator)
        for _ in 0..<length {
            let odd = Int.random(in: 0..<60, using: &generator) == 0
            line += (odd ? rare : pieces).randomElement(using: &generator)!
        }
        return line
    }

    /// Checks every answer of the byte path for `line` against the String path; whether the line was plain.
    @discardableResult
    static func check(_ line: String) -> Bool {
        let bytes = Array(line.utf8)
        return bytes.withUnsafeBytes { buffer -> Bool in
            guard PlainListLine.isPlainURL(buffer) else { return false }
            let parsed = ListText.parse(line)
            #expect(parsed.problems.isEmpty && parsed.lines.count == 1, "\(line)")
            guard let url = parsed.lines.first?.url else { return true }
            #expect(url.string == line && parsed.lines[0].givenName == nil, "\(line)")
            let fromPath = ImageExtension.fromPath(of: url)
            let found = PlainListLine.pathExtension(of: buffer).map {
                String(decoding: buffer[$0], as: UTF8.self).lowercased()
            }
            #expect(found == fromPath, "\(line)")
            var suffix: [UInt8] = []
            if EntryNamer.appendSuffix(ofPlainURL: buffer, to: &suffix) {
                #expect(String(decoding: suffix, as: UTF8.self) == EntryNamer.suffix(url: url), "\(line)")
            } else {
                // Only a percent-escape in the last segment is left to the String path.
                #expect(suffix.isEmpty && url.string.contains("%"), "\(line)")
            }
            return true
        }
    }

    @Test("a line read on its bytes is the line ListText reads, named and typed the same (seeded fuzz)")
    func randomLines() {
        var generator = Generator(state: 0x1157_ADD5)
        var plain = 0
        var other = 0
        for _ in 0..<20_000 {
            let line = Self.randomLine(&generator)
            if Self.check(line) { plain += 1 } else { other += 1 }
        }
        // Both paths are exercised.
        #expect(plain > 3000 && other > 3000, "plain \(plain), other \(other)")
    }

    @Test("extreme lines: the longest URL and one byte more, ports at their bounds, stems past the limit")
    func extremes() {
        let head = "http://a.example/"
        let longest = head + String(repeating: "x", count: ImageURL.maximumLength - head.utf8.count - 4) + ".png"
        #expect(Self.check(longest))
        #expect(!Self.check(longest + "x"))
        #expect((try? ImageURL(longest + "x")) == nil)
        for (port, plain) in [("0", false), ("1", true), ("65535", true), ("65536", false), ("99999", false)] {
            #expect(Self.check("http://h:\(port)/a.png") == plain, "port \(port)")
        }
        #expect(Self.check("http://h:/a.png"))
        #expect(!Self.check("http://h:000080/a.png"))
        for line in [
            "http://host.png", "http://a/b.PNG/", "http://a/.png", "http://a/x.png?y.jpg", "http://a/x#y.png",
            "http://a/x?q#f.png", "http://a/" + String(repeating: "-a.", count: 80) + "gif", "http://a/---",
            "http://a/....jpeg", "http://a/b/", "http://a//", "http://a?x.png", "https://a/%41.png", "http://a/x.JPEG.",
            "http://a/" + String(repeating: "é", count: 3), "http://a/" + String(repeating: "b", count: 200) + ".webp"
        ] {
            Self.check(line)
        }
    }

    @Test("names on bytes: the index padded as EntryNamer pads it, at every width")
    func names() {
        let counts = [1, 9, 99_999, 100_000, 1_000_000, 10_000_001, Int(Int32.max)]
        for count in counts {
            for index in [0, 8, 9, 99_998, 99_999, count - 1] where index >= 0 && index < count {
                var bytes: [UInt8] = []
                Array("-a.png".utf8).withUnsafeBytes {
                    EntryNamer.appendName(index: index, count: count, suffix: $0, to: &bytes)
                }
                #expect(
                    String(decoding: bytes, as: UTF8.self)
                        == EntryNamer.name(index: index, count: count, suffix: "-a.png"))
            }
        }
    }

    @Test("plain text read in pieces on bytes: the lines and problem numbers of one whole parse (seeded fuzz)")
    func scannedText() {
        var generator = Generator(state: 0xC0FF_EE37)
        let extra = ["", "# comment", "\r", "  http://a/b.png  ", "http://a/c.png\tgiven name", "a\u{2028}b", "x\ry"]
        for _ in 0..<300 {
            var text = ""
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                let lineEnd = ["\n", "\r\n", "\n", "\r\r\n"].randomElement(using: &generator)!
                let odd = Int.random(in: 0..<4, using: &generator) == 0
                text += (odd ? extra.randomElement(using: &generator)! : Self.randomLine(&generator)) + lineEnd
            }
            if Bool.random(using: &generator) { text += Self.randomLine(&generator) }
            let whole = ListText.parse(text)
            let bytes = Array(text.utf8)
            // Cut after random line ends, as `list add` cuts what it reads.
            var cuts = bytes.indices.filter { bytes[$0] == 0x0A && Int.random(in: 0..<3, using: &generator) == 0 }
                .map { $0 + 1 }
            cuts.append(bytes.count)
            var urls: [String] = []
            var names: [String?] = []
            var problems: [Int] = []
            var next = 1
            var start = 0
            bytes.withUnsafeBytes { buffer in
                for cut in cuts where cut >= start {
                    next = ListText.scanText(
                        UnsafeRawBufferPointer(rebasing: buffer[start..<cut]), firstLine: next,
                        line: { scanned in
                            switch scanned {
                            case .plain(let line):
                                urls.append(String(decoding: line, as: UTF8.self))
                                names.append(nil)
                            case .parsed(let line):
                                urls.append(line.url.string)
                                names.append(line.givenName)
                            }
                        }, problem: { problems.append($0.line) })
                    start = cut
                }
            }
            #expect(urls == whole.lines.map(\.url.string), "\(text.debugDescription)")
            #expect(names == whole.lines.map(\.givenName), "\(text.debugDescription)")
            #expect(problems == whole.problems.map(\.line), "\(text.debugDescription)")
        }
    }
}
