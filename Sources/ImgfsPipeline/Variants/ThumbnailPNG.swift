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

    /// The `tEXt` chunks of `png` as key and value (Latin-1 read as bytes), in order; empty when it is not a PNG or a
    /// chunk's length runs past the end (every length is checked before it is used).
    public static func text(of png: [UInt8]) -> [(key: String, value: String)] {
        chunks(of: png)?.compactMap { chunk -> (key: String, value: String)? in
            guard chunk.type == "tEXt" else { return nil }
            let data = png[chunk.data]
            guard let nul = data.firstIndex(of: 0) else { return nil }
            return (
                String(decoding: data[data.startIndex..<nul], as: UTF8.self),
                String(decoding: data[(nul + 1)...], as: UTF8.self)
            )
        } ?? []
    }

    /// `png` without its `tEXt` chunks, with those of `text` after its IHDR instead; nil when it is not a well-formed
    /// PNG.
    public static func replacingText(of png: [UInt8], with text: [(key: String, value: String)]) -> [UInt8]? {
        guard isPNG(png), let chunks = chunks(of: png) else { return nil }
        var bare = Array(png[0..<8])
        for chunk in chunks where chunk.type != "tEXt" { bare += png[chunk.whole] }
        return bytes(ofPNG: bare, text: text)
    }

    /// The chunks of `png`: type, data range and whole range (length, type, data, CRC); nil when a length is out of
    /// bounds or there is no signature.
    private static func chunks(of png: [UInt8]) -> [(type: String, data: Range<Int>, whole: Range<Int>)]? {
        guard png.count >= 8, Array(png[0..<8]) == signature else { return nil }
        var chunks: [(type: String, data: Range<Int>, whole: Range<Int>)] = []
        var offset = 8
        while offset < png.count {
            guard png.count - offset >= 12 else { return nil }
            let length = png[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard length <= png.count - offset - 12 else { return nil }
            let type = String(decoding: png[offset + 4..<offset + 8], as: UTF8.self)
            let end = offset + 12 + length
            chunks.append((type, offset + 8..<offset + 8 + length, offset..<end))
            offset = end
            if type == "IEND" { break }
        }
        return chunks
    }
}
