import ImgfsModel
import ImgfsStore

/// A PNG thumbnail with the text chunks of the freedesktop.org Thumbnail Managing Standard (`Thumb::URI`,
/// `Thumb::MTime`, …), added to a PNG that has none.
///
/// Guarantees: the chunks are inserted right after `IHDR` (before any image data, as the standard's readers expect),
/// each a `tEXt` chunk with its CRC-32; the rest of the PNG is unchanged; ``size(ofPNG:text:)`` is the length
/// ``bytes(ofPNG:text:)`` returns; keys and values are written as given (the caller passes ASCII: escaped URIs and
/// decimal numbers). Input that is not a PNG starting with `IHDR` is returned unchanged.
public enum ThumbnailPNG {
    /// The 8-byte PNG signature, then IHDR: 4 length + 4 type + 13 data + 4 CRC.
    static let headerLength = 8 + 4 + 4 + 13 + 4
    static let signature: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

    /// Whether `png` starts with the PNG signature and an IHDR chunk.
    public static func isPNG(_ png: [UInt8]) -> Bool {
        png.count >= headerLength && Array(png[0..<8]) == signature && Array(png[12..<16]) == Array("IHDR".utf8)
    }

    /// One `tEXt` chunk: length, type, `key` NUL `value`, CRC-32 of type and data.
    static func chunk(key: String, value: String) -> [UInt8] {
        let data = Array(key.utf8) + [0] + Array(value.utf8)
        let typed = Array("tEXt".utf8) + data
        let length = UInt32(truncatingIfNeeded: data.count)
        let crc = CRC32.checksum(typed)
        return bigEndian(length) + typed + bigEndian(crc)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    }

    /// The length of `png` (of `pngSize` bytes) with the chunks of `text` added.
    public static func size(ofPNG pngSize: Int, text: [(key: String, value: String)]) -> Int {
        pngSize + text.reduce(0) { $0 + 12 + $1.key.utf8.count + 1 + $1.value.utf8.count }
    }

    /// `png` with a `tEXt` chunk for each of `text`, in order, after its IHDR.
    public static func bytes(ofPNG png: [UInt8], text: [(key: String, value: String)]) -> [UInt8] {
        guard isPNG(png) else { return png }
        var out: [UInt8] = []
        out.reserveCapacity(size(ofPNG: png.count, text: text))
        out += png[0..<headerLength]
        for (key, value) in text { out += chunk(key: key, value: value) }
        out += png[headerLength...]
        return out
    }

    /// The standard's keys for a thumbnail of the file `uri` whose mtime is `modified` seconds: `Thumb::URI`,
    /// `Thumb::MTime`, and `Thumb::Size` when the file's size is given (it must be the file's `stat` size).
    public static func keys(uri: String, modified: Int, size: Int? = nil) -> [(key: String, value: String)] {
        [("Thumb::URI", uri), ("Thumb::MTime", String(modified))] + (size.map { [("Thumb::Size", String($0))] } ?? [])
    }
}
