import ImgfsModel
import ImgfsPipeline
import Testing

/// ``VariantKind``: directory names and tokens read back exactly, extreme and hostile numbers refused, and the
/// encoding a name asks for.
@Suite("Variant kinds")
struct VariantKindTests {
    @Test("directory names: sizes and exact sizes from 1 to 16384, canonical only; anything else is nil")
    func shapes() {
        #expect(VariantKind.Shape("256") == .fit(256))
        #expect(VariantKind.Shape("224x224") == .cover(width: 224, height: 224))
        #expect(VariantKind.Shape("1x16384") == .cover(width: 1, height: 16384))
        #expect(VariantKind.Shape("whole") == .whole)
        let refused = [
            "", "0", "16385", "-1", "+5", "007", "1x", "x1", "1x1x1", "0x5", "5x0", "1X1", "99999999999999999999",
            "\(Int.max)", "\(Int.max)x1", "1x\(Int.min)", " 1", "1 ", "1.5", "１２", "٣", "256\u{0}", "whole2"
        ]
        for text in refused { #expect(VariantKind.Shape(text) == nil, "\(text)") }
    }

    @Test("tokens read back exactly the kinds they were written from; other tokens are nil")
    func tokens() {
        let shapes: [VariantKind.Shape] = [.fit(1), .fit(16384), .cover(width: 224, height: 224), .whole]
        for shape in shapes {
            for format in [nil] + VariantFormat.allCases {
                let kind = VariantKind(shape, format: format)
                #expect(VariantKind(token: kind.token) == kind, "\(kind.token)")
                #expect(!kind.token.contains(";") && !kind.token.contains("/") && !kind.token.contains(" "))
            }
        }
        for token in ["", ".", "256.", "256.bmp", ".png", "256.png.png", "whole.PNG", "0.png", "x.jpeg"] {
            #expect(VariantKind(token: token) == nil, "\(token)")
        }
    }

    @Test("a name's extension asks for an encoding: the fragment's first, then the path's; unwritable types are nil")
    func named() throws {
        let thumb = VariantKind(.fit(256))
        let jpegView = VariantKind(.whole, format: .jpeg)
        func url(_ text: String) throws -> ImageURL { try ImageURL(text) }
        #expect(VariantKind.named(try url("http://h/a.png"), in: thumb) == VariantKind(.fit(256), format: .png))
        #expect(VariantKind.named(try url("http://h/a.PNG?x=1.jpg"), in: thumb)?.format == .png)
        #expect(VariantKind.named(try url("http://h/a.avif#.jpg"), in: thumb)?.format == .jpeg)
        #expect(VariantKind.named(try url("http://h/a.heif"), in: thumb)?.format == .heic)
        #expect(VariantKind.named(try url("http://h/raw/7f3a9c"), in: thumb) == thumb)
        #expect(VariantKind.named(try url("http://h/a.php?id=3"), in: thumb) == thumb)
        #expect(VariantKind.named(try url("http://h/a.png#imgfs-background"), in: thumb)?.format == .png)
        #expect(VariantKind.named(try url("http://h/a.bmp"), in: thumb) == nil)
        #expect(VariantKind.named(try url("http://h/a.png#.svg"), in: thumb) == nil)
        #expect(VariantKind.named(try url("http://h/a.avif"), in: jpegView) == nil)
        #expect(VariantKind.named(try url("http://h/a.avif#.jpeg"), in: jpegView) == jpegView)
        #expect(VariantKind.named(try url("http://h/a"), in: jpegView) == jpegView)
        #expect(VariantKind.named(fileName: "00001-photo.webp", in: thumb)?.format == .webp)
        #expect(VariantKind.named(fileName: "00002-7f3a9c", in: thumb) == thumb)
        #expect(VariantKind.named(fileName: "00003.ico", in: thumb) == nil)
        #expect(VariantKind.named(fileName: String(repeating: ".", count: 300), in: thumb) == thumb)
    }

    @Test("formats: extensions and media types of every format imgfs writes, each one's extension read back")
    func formats() {
        for format in VariantFormat.allCases {
            #expect(VariantFormat(fileExtension: format.fileExtension) == format)
            #expect(VariantFormat(contentType: format.contentType + "; q=1") == format)
        }
        for text in ["", ".", "bmp", "svg", "jpgx", "image/jpeg", String(repeating: "j", count: 10_000)] {
            #expect(VariantFormat(fileExtension: text) == nil, "\(text.prefix(20))")
        }
        #expect(VariantFormat(contentType: "text/html") == nil)
        #expect(VariantFormat(contentType: "image/") == nil)
    }
}
