import ImgfsModel
import Testing

@Suite("Name codec")
struct NameCodecTests {
    @Test("encodes every reserved character, as Python's quote(url, safe='') does")
    func encodesLikePython() {
        // quote("https://example.com/a b/ü.png?x=1&y=[2]#frag", safe='') in CPython 3.11:
        #expect(
            NameCodec.encode("https://example.com/a b/ü.png?x=1&y=[2]#frag")
                == "https%3A%2F%2Fexample.com%2Fa%20b%2F%C3%BC.png%3Fx%3D1%26y%3D%5B2%5D%23frag")
        #expect(NameCodec.encode("A-Z_a.z~0+9%") == "A-Z_a.z~0%2B9%25")
    }

    static let samples: [String: String] = [
        "ascii": "http://example.com/cat.png",
        "unicode host and path": "https://bücher.example/bild/straße.jpg",
        "cjk": "https://例え.jp/画像.png?サイズ=大",
        "query string": "https://cdn.example.com/i.webp?w=300&h=200&sig=abc%2Fdef%3D&x=a+b",
        "fragment": "https://example.com/a.png#.png",
        "ipv6": "http://[::1]:8080/x.gif",
        "8 KiB": "https://example.com/" + String(repeating: "p%20q/ä", count: 1000)
    ]

    @Test("round-trips ASCII, Unicode, query strings, fragments and 8 KiB URLs", arguments: samples.keys.sorted())
    func roundTrips(_ sample: String) throws {
        let url = try #require(Self.samples[sample])
        let decoded = try NameCodec.decode(Array(NameCodec.encode(url).utf8))
        #expect(decoded == url)
        #expect(try ImageURL(decoded).string == url)
    }

    @Test("decodes lower-case hex and encodeURIComponent's unescaped characters")
    func decodesLaxForms() throws {
        #expect(
            try NameCodec.decode(Array("https%3a%2f%2fexample.com%2f(1)!*'.png".utf8))
                == "https://example.com/(1)!*'.png")
    }

    @Test("rejects bad percent escapes with their offset")
    func rejectsBadEscapes() {
        #expect(throws: NameError.invalidPercentEscape(offset: 4)) { try NameCodec.decode(Array("http%3%zz".utf8)) }
        #expect(throws: NameError.invalidPercentEscape(offset: 0)) { try NameCodec.decode(Array("%".utf8)) }
        #expect(throws: NameError.invalidPercentEscape(offset: 2)) { try NameCodec.decode(Array("ab%G0".utf8)) }
    }

    @Test("rejects NUL and bytes that are not UTF-8")
    func rejectsBadBytes() {
        #expect(throws: NameError.forbiddenCharacter(0)) { try NameCodec.decode(Array("http%00x".utf8)) }
        #expect(throws: NameError.notUTF8) { try NameCodec.decode(Array("http%FF".utf8)) }
    }
}

@Suite("Image URLs")
struct ImageURLTests {
    @Test(
        "rejects what is not an http(s) URL",
        arguments: [
            ("not a url", NameError.notAURL),
            ("http://exa mple.com/a.png", NameError.notAURL),
            ("http://x/\u{1f}", NameError.forbiddenCharacter(0x1f)),
            ("example.com/a.png", NameError.notAURL),
            ("ftp://example.com/a.png", NameError.unsupportedScheme("ftp")),
            ("file:///etc/passwd", NameError.unsupportedScheme("file")),
            ("https:example.com", NameError.notAURL),
            ("https:///a.png", NameError.missingHost),
            ("https://example.com:99999/a.png", NameError.invalidPort),
            ("https://user:secret@example.com/a.png", NameError.credentials),
            ("http://x/\u{7f}", NameError.forbiddenCharacter(0x7f))
        ])
    func rejects(_ text: String, _ expected: NameError) {
        #expect(throws: expected) { try ImageURL(text) }
    }

    @Test("bytes a URL may not hold are requested percent-encoded, and both spellings share one cache key")
    func encodesForRequest() throws {
        let spaced = try ImageURL("http://h/misc/green photo \"<>\\^`{|}é.jpg?q=a b#frag ment")
        #expect(spaced.requestString == "http://h/misc/green%20photo%20%22%3C%3E%5C%5E%60%7B%7C%7D%C3%A9.jpg?q=a%20b")
        let encoded = try ImageURL("http://h/misc/green%20photo%20%22%3C%3E%5C%5E%60%7B%7C%7D%C3%A9.jpg?q=a%20b")
        #expect(spaced.cacheKey == encoded.cacheKey)
        #expect(spaced != encoded, "two names, one image")
        #expect(
            try ImageURL("http://h/a.png").cacheKey == SHA256.hex(of: "http://h/a.png".utf8),
            "plain URLs keep their key")
    }

    @Test("rejects URLs over 8 KiB")
    func rejectsTooLong() {
        let url = "https://example.com/" + String(repeating: "a", count: 8200)
        #expect(throws: NameError.tooLong(url.utf8.count)) { try ImageURL(url) }
    }

    @Test("parses host, port and the keys downloads share")
    func parsesParts() throws {
        let url = try ImageURL("HTTPS://Example.COM:8443/a/ü.png?x=1#frag")
        #expect(url.scheme == "https")
        #expect(url.host == "example.com")
        #expect(url.port == 8443)
        #expect(url.hostKey == "https://example.com:8443")
        #expect(url.resourceKey == "HTTPS://Example.COM:8443/a/ü.png?x=1")
        #expect(url.requestString == "HTTPS://Example.COM:8443/a/%C3%BC.png?x=1")
        #expect(try ImageURL("http://[::1]/x").port == 80)
    }
}

@Suite("Image extensions")
struct ImageExtensionTests {
    @Test("content types map to extensions; paths that already have one are recognised")
    func extensions() throws {
        #expect(ImageExtension.forContentType("image/png") == "png")
        #expect(ImageExtension.forContentType("image/jpeg; charset=binary") == "jpg")
        #expect(ImageExtension.forContentType("IMAGE/SVG+XML") == "svg")
        #expect(ImageExtension.forContentType("text/html") == nil)
        #expect(ImageExtension.fromPath(of: try ImageURL("https://x.example/a/b.JPG?w=1")) == "jpg")
        #expect(ImageExtension.fromPath(of: try ImageURL("https://x.example/a.b/avatar")) == nil)
        #expect(ImageExtension.fromPath(of: try ImageURL("https://x.example/avatar?f=a.png")) == nil)
    }
}
