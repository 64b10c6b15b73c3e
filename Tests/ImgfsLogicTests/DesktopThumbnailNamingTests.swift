import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

/// The names and text of desktop thumbnails: MD5, GLib's `file://` URIs, the PNG text chunks (a parser of bytes that
/// come through the mount: fuzzed with extreme lengths), and the whole-second mtime.
@Suite("Desktop thumbnail naming")
struct DesktopThumbnailNamingTests {
    @Test("MD5 gives RFC 1321's test vectors, at every padding boundary")
    func md5Vectors() {
        #expect(MD5.hex(of: Array("".utf8)) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(MD5.hex(of: Array("a".utf8)) == "0cc175b9c0f1b6a831c399e269772661")
        #expect(MD5.hex(of: Array("abc".utf8)) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(MD5.hex(of: Array("message digest".utf8)) == "f96b697d7cb7938d525a2f31aaf161d0")
        #expect(
            MD5.hex(of: Array(String(repeating: "1234567890", count: 8).utf8)) == "57edf4a22be3c955ac49da2e2107b67a")
        #expect(MD5.hex(of: [UInt8](repeating: 0x61, count: 55)) == "ef1772b6dff9a122358552954ad0df65")
        #expect(MD5.hex(of: [UInt8](repeating: 0x61, count: 56)) == "3b0c8ac703f828b04c6c197006d17218")
        #expect(MD5.hex(of: [UInt8](repeating: 0x61, count: 64)) == "014842d480b571495a4a0363793f7367")
        #expect(
            MD5.hex(of: Array("file:///home/jens/photos/me.png".utf8)) == "c6ee772d9e49320e97ec29a7eb5b1697",
            "the Thumbnail Managing Standard's own example")
    }

    @Test("file:// URIs escape what GLib 2.74's g_filename_to_uri escapes")
    func glibFileURIs() {
        #expect(FileURI.string(forAbsolutePath: "/") == "file:///")
        #expect(FileURI.string(forAbsolutePath: "/a b") == "file:///a%20b")
        #expect(
            FileURI.string(forAbsolutePath: "/x/ä#?%&=:@+$,;!'()*~[]{}|\\^`\"<>")
                == "file:///x/%C3%A4%23%3F%25&=:@+$,%3B!'()*~%5B%5D%7B%7D%7C%5C%5E%60%22%3C%3E")
        #expect(
            FileURI.string(forAbsolutePath: "/m/img/http%3A%2F%2Fa.png")
                == "file:///m/img/http%253A%252F%252Fa.png")
        // Measured with GLib: of the bytes 1…127, exactly these stay as they are.
        let kept = (1...127).map { UInt8($0) }.filter { FileURI.escape([$0]).utf8.count == 1 }
        #expect(
            String(decoding: kept, as: UTF8.self)
                == "!$&'()*+,-./0123456789:=@ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~")
        #expect(FileURI.escape([0xff, 0x00]) == "%FF%00")
    }

    /// A PNG as libvips writes one (IHDR, IDAT, IEND; no text).
    static let png: [UInt8] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
        0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01, 0x7a, 0x5e,
        0xab, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82
    ]

    @Test("text chunks: inserted after IHDR with their CRC, read back, replaced; sizes add up")
    func textChunks() throws {
        let keys = ThumbnailPNG.keys(uri: "file:///m/a%20b.png", modified: 1_700_000_000, size: 48213)
        let file = ThumbnailPNG.bytes(ofPNG: Self.png, text: keys)
        #expect(file.count == ThumbnailPNG.size(ofPNG: Self.png.count, text: keys))
        #expect(Array(file[33..<41]) == [0, 0, 0, 30, 0x74, 0x45, 0x58, 0x74], "the first tEXt right after IHDR")
        let read = ThumbnailPNG.text(of: file)
        #expect(read.map(\.key) == ["Thumb::URI", "Thumb::MTime", "Thumb::Size"])
        #expect(read.map(\.value) == ["file:///m/a%20b.png", "1700000000", "48213"])
        // zlib's CRC-32 of "tEXtThumb::URI\0file:///m/a%20b.png".
        let crc = file[33 + 8 + 30..<33 + 12 + 30].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(crc == 0xe7f1_1175)
        let replaced = try #require(
            ThumbnailPNG.replacingText(of: file, with: ThumbnailPNG.keys(uri: "x.png", modified: 5)))
        #expect(ThumbnailPNG.text(of: replaced).map(\.value) == ["x.png", "5"])
        #expect(
            replaced.count
                == ThumbnailPNG.size(ofPNG: Self.png.count, text: [("Thumb::URI", "x.png"), ("Thumb::MTime", "5")]))
        #expect(ThumbnailPNG.bytes(ofPNG: [1, 2, 3], text: keys) == [1, 2, 3], "not a PNG: unchanged")
    }

    @Test("hostile PNG bytes: truncations, lengths up to 0xFFFFFFFF and random bytes never crash the chunk parser")
    func hostileChunks() {
        let file = ThumbnailPNG.bytes(ofPNG: Self.png, text: ThumbnailPNG.keys(uri: "a", modified: 1))
        for cut in 0...file.count {
            let prefix = Array(file.prefix(cut))
            _ = ThumbnailPNG.text(of: prefix)
            _ = ThumbnailPNG.replacingText(of: prefix, with: [])
        }
        for length: UInt32 in [0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF, UInt32(file.count), 13] {
            var bad = file
            for (i, shift) in [24, 16, 8, 0].enumerated() { bad[33 + i] = UInt8(truncatingIfNeeded: length >> shift) }
            #expect(ThumbnailPNG.text(of: bad).count <= 2)
            _ = ThumbnailPNG.replacingText(of: bad, with: [("k", "v")])
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = Array(file.prefix(8))
            bytes += (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255) }
            _ = ThumbnailPNG.text(of: bytes)
            _ = ThumbnailPNG.replacingText(of: bytes, with: [("k", "v")])
        }
    }

    @Test("an mtime is whole seconds of Last-Modified, else of the fetch time; extreme dates saturate")
    func modificationTime() {
        let fetched = Date(timeIntervalSince1970: 1_700_000_000.75)
        #expect(ImageMetadata(size: 1, fetchedAt: fetched).modificationSeconds == 1_700_000_000)
        let modified = Date(timeIntervalSince1970: 1_600_000_000.2)
        #expect(ImageMetadata(size: 1, lastModified: modified, fetchedAt: fetched).modificationSeconds == 1_600_000_000)
        #expect(ImageMetadata(size: 1, fetchedAt: .distantFuture).modificationSeconds > 0)
        #expect(ImageMetadata(size: 1, lastModified: Date(timeIntervalSince1970: -1e300)).modificationSeconds == .min)
    }

    @Test("the desktop sizes are the standard's folders and pixels")
    func sizes() {
        #expect(DesktopThumbnailSize.allCases.map(\.folder) == ["normal", "large", "x-large", "xx-large"])
        #expect(DesktopThumbnailSize.allCases.map(\.pixels) == [128, 256, 512, 1024])
        #expect(DesktopThumbnailSize(folder: "huge") == nil)
    }
}
