import Foundation
import ImgfsModel
import Testing

/// ``ImageHeader``: exact answers for real files of every format (made with Pillow and vips, 37 × 21 pixels), EXIF
/// orientation in both byte orders and behind a large segment, and a property test of hostile input: truncated,
/// mutated, random and extreme-valued headers never trap and never claim a dimension they do not hold.
@Suite("Image headers")
struct ImageHeaderTests {
    typealias Generator = NamePropertyTests.Generator

    @Test("every format's real file: format, width, height and orientation")
    func realFiles() {
        let cases: [([UInt8], ImageSignature.Format, Int?)] = [
            (HeaderFixtures.png, .png, nil), (HeaderFixtures.gif, .gif, nil), (HeaderFixtures.bmp, .bmp, nil),
            (HeaderFixtures.webpLossy, .webp, nil), (HeaderFixtures.webpLossless, .webp, nil),
            (HeaderFixtures.webpExtended, .webp, nil), (HeaderFixtures.jpegOrientation6, .jpeg, 6),
            (HeaderFixtures.jpegPlain, .jpeg, nil), (HeaderFixtures.jpegProgressive, .jpeg, nil),
            (HeaderFixtures.avif, .avif, nil), (HeaderFixtures.avifRotated, .avif, 8),
            (HeaderFixtures.heic, .heic, nil), (HeaderFixtures.avifVips, .avif, nil)
        ]
        for (bytes, format, orientation) in cases {
            #expect(bytes.count > 30)
            let header = ImageHeader.parse(bytes)
            #expect(header == ImageHeader(format: format, width: 37, height: 21, orientation: orientation), "\(format)")
        }
    }

    @Test("a BMP stored top-down has a positive height; an old OS/2 header is read too")
    func bitmapVariants() {
        var topDown = HeaderFixtures.bmp
        let minus21 = UInt32(bitPattern: -21)
        for i in 0..<4 { topDown[22 + i] = UInt8(truncatingIfNeeded: minus21 >> (8 * UInt32(i))) }
        #expect(ImageHeader.parse(topDown)?.height == 21)
        var core = Array(HeaderFixtures.bmp.prefix(26))
        core.replaceSubrange(14..<26, with: [12, 0, 0, 0, 37, 0, 21, 0, 1, 0, 24, 0])
        #expect(
            ImageHeader.parse(core + [UInt8](repeating: 0, count: 16))
                == ImageHeader(format: .bmp, width: 37, height: 21))
    }

    @Test("JPEG orientation in big-endian EXIF, and a frame header behind a 60 KiB segment")
    func jpegOrientation() {
        for orientation in 1...8 {
            let jpeg = Self.jpeg(exif: Self.exif(orientation: orientation, bigEndian: true), padding: 0)
            #expect(
                ImageHeader.parse(jpeg) == ImageHeader(format: .jpeg, width: 640, height: 480, orientation: orientation)
            )
        }
        let far = Self.jpeg(exif: Self.exif(orientation: 3, bigEndian: false), padding: 60_000)
        #expect(ImageHeader.parse(far) == ImageHeader(format: .jpeg, width: 640, height: 480, orientation: 3))
        // An orientation out of range is not one; the frame is still read.
        let odd = Self.jpeg(exif: Self.exif(orientation: 9, bigEndian: false), padding: 0)
        #expect(ImageHeader.parse(odd) == ImageHeader(format: .jpeg, width: 640, height: 480))
        // Past 64 KiB nothing is read: the format only.
        let beyond = Self.jpeg(exif: [], padding: 66_000)
        #expect(ImageHeader.parse(beyond) == ImageHeader(format: .jpeg))
    }

    @Test("the bytes stop before the dimensions: the format alone; not an image: nil")
    func truncated() throws {
        let all: [[UInt8]] = [
            HeaderFixtures.png, HeaderFixtures.gif, HeaderFixtures.bmp, HeaderFixtures.webpLossy,
            HeaderFixtures.webpLossless, HeaderFixtures.webpExtended, HeaderFixtures.jpegOrientation6,
            HeaderFixtures.avif, HeaderFixtures.heic
        ]
        for bytes in all {
            let whole = try #require(ImageHeader.parse(bytes))
            for length in 0...bytes.count {
                let header = ImageHeader.parse(bytes.prefix(length))
                if let header {
                    #expect(header.format == whole.format)
                    #expect(
                        header.width == nil || (header.width == whole.width && header.height == whole.height),
                        "\(whole.format) cut at \(length): \(header)")
                }
            }
        }
        #expect(ImageHeader.parse(Array("<html><body>not found</body></html>".utf8)) == nil)
        #expect(ImageHeader.parse([]) == nil)
    }

    @Test("hostile headers (property): random bytes, mutated files and extreme fields never trap")
    func hostile() {
        var generator = Generator(state: 37)
        let seeds: [[UInt8]] = [
            HeaderFixtures.png, HeaderFixtures.gif, HeaderFixtures.bmp, HeaderFixtures.webpLossy,
            HeaderFixtures.webpLossless, HeaderFixtures.webpExtended, HeaderFixtures.jpegOrientation6,
            HeaderFixtures.avif, HeaderFixtures.avifRotated, HeaderFixtures.heic,
            Self.jpeg(exif: Self.exif(orientation: 6, bigEndian: true), padding: 100)
        ]
        let extremes: [[UInt8]] = [
            [0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], [0x80, 0, 0, 0], [0x7F, 0xFF, 0xFF, 0xFF],
            [0, 0, 0, 1], [0, 0, 0, 8], [0, 0, 0, 7]
        ]
        var parsed = 0
        for round in 0..<30_000 {
            var bytes = seeds[round % seeds.count]
            switch round % 3 {
            case 0:
                // Random bytes over the file, or extreme 32-bit fields at random places.
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    let at = Int.random(in: 0..<bytes.count, using: &generator)
                    if Bool.random(using: &generator) {
                        bytes[at] = UInt8.random(in: 0...255, using: &generator)
                    } else {
                        let value = extremes.randomElement(using: &generator)!
                        for (i, byte) in value.enumerated() where at + i < bytes.count { bytes[at + i] = byte }
                    }
                }
            case 1:
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            default:
                let keep = Int.random(in: 0...min(40, bytes.count), using: &generator)
                bytes =
                    Array(bytes.prefix(keep))
                    + (0..<Int.random(in: 0...400, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
            }
            guard let header = ImageHeader.parse(bytes) else { continue }
            parsed += 1
            #expect((header.width == nil) == (header.height == nil))
            if let width = header.width, let height = header.height {
                #expect(width > 0 && height > 0 && width <= Int(UInt32.max) && height <= Int(UInt32.max))
            }
            if let orientation = header.orientation { #expect((1...8).contains(orientation)) }
        }
        #expect(parsed > 1000)
    }

    // MARK: - Made-up JPEGs

    /// A TIFF structure with one IFD0 entry: the orientation tag (SHORT) set to `orientation`.
    static func exif(orientation: Int, bigEndian: Bool) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] {
            bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)]
        }
        func u32(_ v: Int) -> [UInt8] { bigEndian ? u16(v >> 16) + u16(v & 0xFFFF) : u16(v & 0xFFFF) + u16(v >> 16) }
        let order: [UInt8] = bigEndian ? Array("MM".utf8) : Array("II".utf8)
        // Two entries: an unrelated tag first (ImageWidth), then the orientation.
        return order + u16(42) + u32(8) + u16(2) + u16(0x0100) + u16(3) + u32(1) + u16(99) + u16(0)
            + u16(0x0112) + u16(3) + u32(1) + u16(orientation) + u16(0) + u32(0)
    }

    /// SOI, an APP1 EXIF segment (when `exif` is not empty), an APP2 of `padding` zero bytes, a baseline frame
    /// header of 640 × 480, then the end of the image.
    static func jpeg(exif: [UInt8], padding: Int) -> [UInt8] {
        func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
            let length = payload.count + 2
            return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        }
        var bytes: [UInt8] = [0xFF, 0xD8]
        if !exif.isEmpty { bytes += segment(0xE1, Array("Exif".utf8) + [0, 0] + exif) }
        var left = padding
        while left > 0 {
            let piece = min(left, 65_000)
            bytes += segment(0xE2, [UInt8](repeating: 0, count: piece))
            left -= piece
        }
        bytes += segment(0xC0, [8, 0x01, 0xE0, 0x02, 0x80, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
        return bytes + [0xFF, 0xD9]
    }
}

/// Real files of 37 × 21 pixels (BMP: its 54-byte header), made with Pillow (`Image.new('RGB', (37, 21))`, saved in
/// each format; EXIF orientation 6 for the JPEG, 8 for the rotated AVIF) and vips (`vips copy x.png y.avif`, `.heif`).
enum HeaderFixtures {
    static func decode(_ base64: String) -> [UInt8] { Array(Data(base64Encoded: base64)!) }

    /// `png` (95 bytes).
    static let png = decode(
        "iVBORw0KGgoAAAANSUhEUgAAACUAAAAVCAIAAABOhrD5AAAAJklEQVR4nGM8IafBQEfARE/LRu0btW/UvlH7Ru0btW/UvlH7qAAA"
            + "edoBODTLOf8AAAAASUVORK5CYII=")
    /// `gif` (291 bytes).
    static let gif = decode(
        "R0lGODdhJQAVAIIAAJkAAMwAAJkzAMwzAJkAM8wAM5kzM8wzMywAAAAAJQAVAEAI8AAPFBBIcKDBgggPKkx4gCCBhgMNHJQIkaJA"
            + "AwUpDnyI8MDDAhoZHmQI0WPJjQ05fqSoMuVFlCZjTlSIcaRIgh1HLgy5MCfOgT9PBh0KtGhJokJ1JvWp9KZOniVDIoRq1GdNhlSX"
            + "BgWp1GBNiwsPBjgwoMCAA2PLnk1rFi3ZtmzXvj3r1q3ZgWPv2i27F69AvnndqnUbd+5duXLHKq47tq/jxoD/DuQb2e/gxZcJa84c"
            + "16/Zh5HtCpjsF63Es3r5boYruEBcA53VwnY7+nHDsQQiz97bEIBku6sRs46tGbPeAKdLN8aNWsBvvr4PRM8bEAA7")
    /// `bmp` (54 bytes).
    static let bmp = decode(
        "Qk1mCQAAAAAAADYAAAAoAAAAJQAAABUAAAABABgAAAAAADAJAADEDgAAxA4AAAAAAAAAAAAA")
    /// `webp_lossy` (82 bytes).
    static let webpLossy = decode(
        "UklGRkoAAABXRUJQVlA4ID4AAAAwAwCdASolABUAPtFmrFCoJaQipWgBABoJZwDImA8KmpKAAP7p7P64WyzJ//xvH+S7+3fbXwrn"
            + "IH1rVwAAAA==")
    /// `webp_lossless` (38 bytes).
    static let webpLossless = decode(
        "UklGRh4AAABXRUJQVlA4TBEAAAAvJAAFAAdQjyIXpf+BiOh/AAA=")
    /// `webp_vp8x` (152 bytes).
    static let webpExtended = decode(
        "UklGRpAAAABXRUJQVlA4WAoAAAAYAAAAJAAAFAAAQUxQSAoAAAABB1DAiAhERP8DVlA4ID4AAAAwAwCdASolABUAPtFmrFCoJaQi"
            + "pWgBABoJZwDImA8KmpKAAP7p7P64WyzJ//xvH+S7+3fbXwrnIH1rVwAAAEVYSUYaAAAATU0AKgAAAAgAAQESAAMAAAABAAYAAAAA"
            + "AAA=")
    /// `jpeg_exif6` (688 bytes).
    static let jpegOrientation6 = decode(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/4QAiRXhpZgAATU0AKgAAAAgAAQESAAMAAAABAAYAAAAAAAD/2wBDABsSFBcUERsXFhceHBsg"
            + "KEIrKCUlKFE6PTBCYFVlZF9VXVtqeJmBanGQc1tdhbWGkJ6jq62rZ4C8ybqmx5moq6T/2wBDARweHigjKE4rK06kbl1upKSkpKSk"
            + "pKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKT/wAARCAAVACUDASIAAhEBAxEB/8QAHwAAAQUBAQEB"
            + "AQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAk"
            + "M2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKj"
            + "pKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAA"
            + "AAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl"
            + "8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmq"
            + "srO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCjRRRWB7AUUUUAFFFFABRR"
            + "RQAUUUUAFFFFAH//2Q==")
    /// `jpeg_plain` (652 bytes).
    static let jpegPlain = decode(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABsSFBcUERsXFhceHBsgKEIrKCUlKFE6PTBCYFVlZF9VXVtqeJmBanGQc1tdhbWGkJ6j"
            + "q62rZ4C8ybqmx5moq6T/2wBDARweHigjKE4rK06kbl1upKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSk"
            + "pKSkpKSkpKT/wAARCAAVACUDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
            + "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
            + "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
            + "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
            + "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
            + "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
            + "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCjRRRWB7AUUUUAFFFFABRRRQAUUUUAFFFFAH//2Q==")
    /// `jpeg_progressive` (530 bytes).
    static let jpegProgressive = decode(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABsSFBcUERsXFhceHBsgKEIrKCUlKFE6PTBCYFVlZF9VXVtqeJmBanGQc1tdhbWGkJ6j"
            + "q62rZ4C8ybqmx5moq6T/2wBDARweHigjKE4rK06kbl1upKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSkpKSk"
            + "pKSkpKSkpKT/wgARCAAVACUDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAP/xAAWAQEBAQAAAAAAAAAAAAAAAAAAAwT/"
            + "2gAMAwEAAhADEAAAAYCewAAAAD//xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAEFAn//xAAUEQEAAAAAAAAAAAAAAAAAAAAg"
            + "/9oACAEDAQE/AV//xAAUEQEAAAAAAAAAAAAAAAAAAAAg/9oACAECAQE/AV//xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAY/"
            + "An//xAAUEAEAAAAAAAAAAAAAAAAAAAAw/9oACAEBAAE/IX//2gAMAwEAAgADAAAAEAgggggv/8QAFBEBAAAAAAAAAAAAAAAAAAAA"
            + "IP/aAAgBAwEBPxBf/8QAFBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAgEBPxBf/8QAFBABAAAAAAAAAAAAAAAAAAAAMP/aAAgBAQAB"
            + "PxB//9k=")
    /// `avif` (316 bytes).
    static let avif = decode(
        "AAAAIGZ0eXBhdmlmAAAAAGF2aWZtaWYxbWlhZk1BMUIAAADrbWV0YQAAAAAAAAAhaGRscgAAAAAAAAAAcGljdAAAAAAAAAAAAAAA"
            + "AAAAAAAOcGl0bQAAAAAAAQAAAB5pbG9jAAAAAEQAAAEAAQAAAAEAAAETAAAAKQAAAChpaW5mAAAAAAABAAAAGmluZmUCAAAAAAEA"
            + "AGF2MDFDb2xvcgAAAABqaXBycAAAAEtpcGNvAAAAFGlzcGUAAAAAAAAAJQAAABUAAAAQcGl4aQAAAAADCAgIAAAADGF2MUOBAAwA"
            + "AAAAE2NvbHJuY2x4AAEADQAGgAAAABdpcG1hAAAAAAAAAAEAAQQBAoMEAAAAMW1kYXQSAAoJGBUko0QENBoQMhocR4eF3dNNNMLA"
            + "AADcqMEFWclctfk0p+MlXg==")
    /// `avif_rot` (326 bytes).
    static let avifRotated = decode(
        "AAAAIGZ0eXBhdmlmAAAAAGF2aWZtaWYxbWlhZk1BMUIAAAD1bWV0YQAAAAAAAAAhaGRscgAAAAAAAAAAcGljdAAAAAAAAAAAAAAA"
            + "AAAAAAAOcGl0bQAAAAAAAQAAAB5pbG9jAAAAAEQAAAEAAQAAAAEAAAEdAAAAKQAAAChpaW5mAAAAAAABAAAAGmluZmUCAAAAAAEA"
            + "AGF2MDFDb2xvcgAAAAB0aXBycAAAAFRpcGNvAAAAFGlzcGUAAAAAAAAAJQAAABUAAAAQcGl4aQAAAAADCAgIAAAADGF2MUOBAAwA"
            + "AAAAE2NvbHJuY2x4AAEADQAGgAAAAAlpcm90AQAAABhpcG1hAAAAAAAAAAEAAQUBAoMEhQAAADFtZGF0EgAKCRgVJKNEBDQaEDIa"
            + "HEeHhd3TTTTCwAAA3KjBBVnJXLX5NKfjJV4=")
    /// `heic.heif` (757 bytes).
    static let heic = decode(
        "AAAAGGZ0eXBoZWljAAAAAG1pZjFoZWljAAAB5G1ldGEAAAAAAAAAIWhkbHIAAAAAAAAAAHBpY3QAAAAAAAAAAAAAAAAAAAAADnBp"
            + "dG0AAAAAAAIAAAAQaWRhdAAAAAAAJQAVAAAATGlsb2MBAAAAREAAAwABAAAAAAAAAgQAAQAAAAAAAAAzAAIAAQAAAAAAAAABAAAA"
            + "AAAAAAgAAwAAAAAAAAI3AAEAAAAAAAAAvgAAAE1paW5mAAAAAAADAAAAFWluZmUCAAABAAEAAGh2YzEAAAAAFWluZmUCAAAAAAIA"
            + "AGdyaWQAAAAAFWluZmUCAAABAAMAAEV4aWYAAAAA2GlwcnAAAAC2aXBjbwAAAHZodmNDAQNwAAAAAAAAAAAAHvAA/P34+AAADwMg"
            + "AAEAGEABDAH//wNwAAADAJAAAAMAAAMAHroCQCEAAQAqQgEBA3AAAAMAkAAAAwAAAwAeoCCBBZbqrprm4EBAwIAAAAMAgAAAAwCE"
            + "IgABAAZEAcFzwYkAAAAUaXNwZQAAAAAAAABAAAAAQAAAABRpc3BlAAAAAAAAACUAAAAVAAAAEHBpeGkAAAAAAwgICAAAABppcG1h"
            + "AAAAAAAAAAIAAQKBAgACAgOEAAAAKGlyZWYAAAAAAAAADmRpbWcAAgABAAEAAAAOY2RzYwADAAEAAgAAAPltZGF0AAAALygBrxMh"
            + "ZGNA9Sci//9o8p/6Khn/bPZYWdyugMFb8vrA9mSbwPOqkZ6Ah2mnMBV4AAAABkV4aWYAAElJKgAIAAAABgASAQMAAQAAAAEAAAAa"
            + "AQUAAQAAAFYAAAAbAQUAAQAAAF4AAAAoAQMAAQAAAAIAAAATAgMAAQAAAAEAAABphwQAAQAAAGYAAAAAAAAALxkBAOgDAAAvGQEA"
            + "6AMAAAYAAJAHAAQAAAAwMjEwAZEHAAQAAAABAgMAAKAHAAQAAAAwMTAwAaADAAEAAAD//wAAAqAEAAEAAAAlAAAAA6AEAAEAAAAV"
            + "AAAAAAAAAA==")
    /// `v.avif` (555 bytes).
    static let avifVips = decode(
        "AAAAHGZ0eXBhdmlmAAAAAGF2aWZtaWYxbWlhZgAAASttZXRhAAAAAAAAACFoZGxyAAAAAAAAAABwaWN0AAAAAAAAAAAAAAAAAAAA"
            + "AA5waXRtAAAAAAABAAAANGlsb2MAAAAAREAAAgABAAAAAAFPAAEAAAAAAAAAHgACAAAAAAFtAAEAAAAAAAAAvgAAADhpaW5mAAAA"
            + "AAACAAAAFWluZmUCAAAAAAEAAGF2MDEAAAAAFWluZmUCAAABAAIAAEV4aWYAAAAAamlwcnAAAABLaXBjbwAAABNjb2xybmNseAAC"
            + "AAIABoAAAAAMYXYxQ4EADAAAAAAUaXNwZQAAAAAAAAAlAAAAFQAAABBwaXhpAAAAAAMICAgAAAAXaXBtYQAAAAAAAAABAAEEgYID"
            + "hAAAABppcmVmAAAAAAAAAA5jZHNjAAIAAQABAAAA5G1kYXQSAAoJGBUkowQICBoQMg8YAAAAQAs8/Et+AfcHnJIAAAAGRXhpZgAA"
            + "SUkqAAgAAAAGABIBAwABAAAAAQAAABoBBQABAAAAVgAAABsBBQABAAAAXgAAACgBAwABAAAAAgAAABMCAwABAAAAAQAAAGmHBAAB"
            + "AAAAZgAAAAAAAAAvGQEA6AMAAC8ZAQDoAwAABgAAkAcABAAAADAyMTABkQcABAAAAAECAwAAoAcABAAAADAxMDABoAMAAQAAAP//"
            + "AAACoAQAAQAAACUAAAADoAQAAQAAABUAAAAAAAAA")
}
