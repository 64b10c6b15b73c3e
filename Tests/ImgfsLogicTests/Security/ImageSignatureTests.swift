import Foundation
import ImgfsModel
import Testing

@Suite("Image signatures")
struct ImageSignatureTests {
    typealias Format = ImageSignature.Format

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A minimal header of every format, written by hand from the format's specification.
    static let headers: [(String, [UInt8], Format)] = [
        ("PNG", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D] + bytes("IHDR"), .png),
        ("JPEG/JFIF", [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + bytes("JFIF"), .jpeg),
        ("JPEG/Exif", [0xFF, 0xD8, 0xFF, 0xE1, 0x12, 0x34] + bytes("Exif"), .jpeg),
        ("GIF87a", bytes("GIF87a") + [1, 0, 1, 0], .gif),
        ("GIF89a", bytes("GIF89a") + [1, 0, 1, 0], .gif),
        ("WebP", bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WEBPVP8 "), .webp),
        ("AVIF", [0, 0, 0, 0x1C] + bytes("ftypavif") + [0, 0, 0, 0] + bytes("avifmif1miaf"), .avif),
        ("AVIF sequence", [0, 0, 0, 0x18] + bytes("ftypavis") + [0, 0, 0, 0] + bytes("avismsf1"), .avif),
        (
            "AVIF with generic major brand", [0, 0, 0, 0x18] + bytes("ftypmif1") + [0, 0, 0, 0] + bytes("mif1avif"),
            .avif
        ),
        ("HEIC", [0, 0, 0, 0x18] + bytes("ftypheic") + [0, 0, 0, 0] + bytes("mif1heic"), .heic),
        ("HEIC heix", [0, 0, 0, 0x10] + bytes("ftypheix") + [0, 0, 0, 0], .heic),
        ("HEIF mif1", [0, 0, 0, 0x14] + bytes("ftypmif1") + [0, 0, 0, 0] + bytes("mif1"), .heic),
        ("HEIF sequence", [0, 0, 0, 0x14] + bytes("ftypmsf1") + [0, 0, 0, 0] + bytes("hevc"), .heic),
        ("BMP info header", bytes("BM") + [0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 40, 0, 0, 0], .bmp),
        ("BMP core header", bytes("BM") + [0x20, 0, 0, 0, 0, 0, 0, 0, 0x1A, 0, 0, 0, 12, 0, 0, 0], .bmp),
        ("BMP v5 header", bytes("BM") + [0x8A, 4, 0, 0, 0, 0, 0, 0, 0x8A, 0, 0, 0, 124, 0, 0, 0], .bmp),
        ("TIFF little-endian", bytes("II") + [0x2A, 0, 8, 0, 0, 0], .tiff),
        ("TIFF big-endian", bytes("MM") + [0, 0x2A, 0, 0, 0, 8], .tiff),
        ("ICO", [0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0x68, 4, 0, 0, 0x16, 0, 0, 0], .ico),
        ("CUR", [0, 0, 2, 0, 2, 0, 32, 32, 0, 0, 4, 0, 4, 0], .ico),
        ("JPEG XL codestream", [0xFF, 0x0A, 0xFA, 0x1F], .jpegXL),
        ("JPEG XL container", [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A, 0, 0, 0, 0x14], .jpegXL),
        ("SVG", bytes(#"<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>"#), .svg),
        (
            "SVG with BOM, declaration, comment and DOCTYPE",
            [0xEF, 0xBB, 0xBF]
                + bytes(
                    """
                      \t<?xml version="1.0" encoding="UTF-8" standalone="no"?>
                    <!-- Generator: hand, 1 > 0 -->
                    <!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
                    <svg version="1.1">
                    """), .svg
        ),
        (
            "SVG with internal DTD subset",
            bytes(
                """
                <?xml version="1.0"?><!DOCTYPE svg [ <!ENTITY ns "http://www.w3.org/2000/svg>]"> <!-- it's ] > -->
                ]><svg xmlns="&ns;">
                """), .svg
        ),
        ("SVG with namespace prefix", bytes(#"<svg:svg xmlns:svg="http://www.w3.org/2000/svg">"#), .svg),
        ("SVG with lower-case doctype", bytes("<!doctype svg><svg>"), .svg)
    ]

    @Test("recognises a hand-made header of every format", arguments: headers.indices)
    func recognisesHeaders(_ index: Int) {
        let (name, header, format) = Self.headers[index]
        #expect(ImageSignature.detect(header) == format, "\(name)")
        #expect(ImageSignature.detect(header + Array(repeating: 0x42, count: 4000)) == format, "\(name) + tail")
        #expect(ImageSignature.detect(ArraySlice(header)) == format, "\(name) as a slice")
        #expect(ImageSignature.describe(header).hasSuffix(" image"), "\(name)")
    }

    @Test("every format has a hand-made header")
    func everyFormatCovered() {
        #expect(Set(Self.headers.map(\.2)) == Set(Format.allCases))
        #expect(Format.jpegXL.rawValue == "jpeg-xl")
        #expect(Format.png.rawValue == "png")
    }

    static let negatives: [(String, [UInt8])] = [
        ("empty", []),
        ("HTML", bytes("<!DOCTYPE html>\n<html><head><title>Not Found</title></head><body><svg></svg></body></html>")),
        ("HTML without doctype", bytes("<html><svg xmlns='http://www.w3.org/2000/svg'/></html>")),
        ("HTML after comment", bytes("<!-- error page --><!doctype HTML><svg>")),
        ("JSON", bytes(#"{"error": "not found", "status": 404}"#)),
        ("JSON array", bytes(#"[1, 2, 3]"#)),
        ("plain text", bytes("Not Found\n")),
        ("text mentioning svg", bytes("svg <svg> is not at the start")),
        ("white space", bytes(" \n\t ")),
        ("truncated PNG signature", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A]),
        ("PNG signature with one wrong byte", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0B]),
        ("JPEG without third byte", [0xFF, 0xD8]),
        ("GIF without version", bytes("GIF8")),
        ("RIFF WAVE", bytes("RIFF") + [0x24, 0, 0, 0] + bytes("WAVEfmt ")),
        ("RIFF without form type", bytes("RIFF") + [0x24, 0, 0]),
        ("XML that is not SVG", bytes(#"<?xml version="1.0"?><rss version="2.0"><channel/></rss>"#)),
        ("XML with another doctype", bytes(#"<?xml version="1.0"?><!DOCTYPE note SYSTEM "note.dtd"><svg/>"#)),
        ("element named svgfoo", bytes("<svgfoo/>")),
        ("SVG root cut at the end", bytes("<?xml version='1.0'?><svg")),
        ("unterminated declaration", bytes("<?xml version='1.0'")),
        ("unterminated comment", bytes("<!-- <svg>")),
        ("MP4 video", [0, 0, 0, 0x18] + bytes("ftypisom") + [0, 0, 2, 0] + bytes("isomiso2")),
        ("MP4 whose box size reads as an ICO header", [0, 0, 1, 0] + bytes("ftypisom") + [0, 0, 2, 0] + bytes("isom")),
        ("ftyp box too small", [0, 0, 0, 0x0C] + bytes("ftypavif") + [0, 0, 0, 0]),
        ("ftyp box of odd size", [0, 0, 0, 0x1A] + bytes("ftypavif") + [0, 0, 0, 0] + bytes("avif")),
        ("BM with unknown DIB header size", bytes("BM") + [0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 41, 0, 0, 0]),
        ("BM text", bytes("BMW and Mercedes are car makers")),
        ("BMP header too short", bytes("BM") + [0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 40]),
        ("ICO with no images", [0, 0, 1, 0, 0, 0, 0, 0]),
        ("ICO of unknown type", [0, 0, 3, 0, 1, 0, 0, 0]),
        ("zeros", Array(repeating: 0, count: 64)),
        ("TIFF magic with wrong byte order", bytes("IM") + [0x2A, 0]),
        ("PDF", bytes("%PDF-1.7\n"))
    ]

    @Test("refuses what is not an image", arguments: negatives.indices)
    func refusesNonImages(_ index: Int) {
        let (name, body) = Self.negatives[index]
        #expect(ImageSignature.detect(body) == nil, "\(name)")
        #expect(!ImageSignature.describe(body).isEmpty, "\(name)")
    }

    @Test("decides SVG within bytesNeeded bytes and not beyond")
    func svgBound() {
        #expect(ImageSignature.bytesNeeded == 1024)
        let svg = Self.bytes("<svg/>")
        let fits = Self.bytes("<!--") + Array(repeating: UInt8(ascii: "-"), count: 1024 - 4 - 3 - 5) + Self.bytes("-->")
        #expect(fits.count + 5 == 1024)
        #expect(ImageSignature.detect(fits + svg) == .svg)
        #expect(ImageSignature.detect(Self.bytes(" ") + fits + svg) == nil)
        #expect(ImageSignature.detect(Array(repeating: UInt8(ascii: " "), count: 2000) + svg) == nil)
    }

    @Test(
        "describes bodies that are not images",
        arguments: [
            ("", "empty body"),
            ("<!DOCTYPE html>\n<html lang=\"en\">", "HTML (starts with \"<!DOCTYPE html\")"),
            ("\u{FEFF}  <html><body>Oops</body></html>", "HTML (starts with \"<html\")"),
            ("<!-- x -->\n<!doctype html>", "HTML (starts with \"<!doctype html\")"),
            ("{\"error\": \"no\"}", "JSON"),
            ("\n[{\"a\": 1}]", "JSON"),
            ("Not Found\nsorry", "text (starts with \"Not Found\")"),
            ("<?xml version=\"1.0\"?>\n<rss version=\"2.0\">", "XML (root element <rss>)"),
            ("<?xml version=\"1.0\"?>\n<!DOCTYPE note SYSTEM \"note.dtd\">", "XML (document type note)"),
            ("%PDF-1.4", "PDF document"),
            ("   ", "white space only (3 bytes)"),
            (
                "A very long line of text that goes on and on and on",
                "text (starts with \"A very long line of text that go…\")"
            )
        ])
    func describesText(_ body: String, _ expected: String) {
        #expect(ImageSignature.describe(Array(body.utf8)) == expected)
    }

    @Test("describes binary bodies")
    func describesBinary() {
        #expect(
            ImageSignature.describe(Self.bytes("RIFF") + [0x24, 0, 0, 0] + Self.bytes("WAVEfmt ")) == "RIFF WAVE data")
        #expect(
            ImageSignature.describe([0, 0, 0, 0x18] + Self.bytes("ftypisom") + [0, 0, 2, 0] + Self.bytes("isomiso2"))
                == "ISO media (brand isom)")
        #expect(ImageSignature.describe([0x1F, 0x8B, 8, 0]) == "gzip-compressed data")
        #expect(ImageSignature.describe(Array(0..<16)) == "unknown (first bytes 00 01 02 03 04 05 06 07 …)")
        #expect(ImageSignature.describe([0x3C, 0x00, 0xFF]) == "unknown (first bytes 3C 00 FF)")
        #expect(ImageSignature.describe([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == "PNG image")
        #expect(ImageSignature.describe(Self.bytes("<x\u{7}y>")) == "XML (root element <x?y>)")
    }
}
