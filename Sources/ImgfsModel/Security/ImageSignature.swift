/// Recognises image formats from the first bytes of a response body, so that imgfs can refuse to serve a body that
/// is not an image (an HTML error page sent with status 200, a JSON error, a video, an archive).
///
/// Guarantees: ``detect(_:)`` reads at most ``bytesNeeded`` leading bytes, never traps on short or malformed input,
/// and names a format only when the bytes carry that format's signature. The weak signatures (BMP, ICO/CUR, ISO BMFF)
/// are backed by a plausibility check of the header that follows them. Nothing past the signature is validated: a
/// body that passes may still be a damaged image.
public enum ImageSignature {
    /// An image format imgfs is willing to serve. Raw values are lower-case names for logs and statistics.
    public enum Format: String, Sendable, CaseIterable {
        case png, jpeg, gif, webp, avif, heic, bmp, tiff, ico, svg
        case jpegXL = "jpeg-xl"
    }

    /// The largest number of leading bytes ``detect(_:)`` looks at: 1024.
    ///
    /// Every binary format is decided within its first 32 bytes, except that ISO BMFF `ftyp` compatible brands are
    /// read up to this bound. SVG needs the most: the `<svg` root element must start within these 1024 bytes, after
    /// any BOM, XML declaration, comments and `<!DOCTYPE svg …>`. Passing more bytes is harmless; they are ignored.
    public static let bytesNeeded = 1024

    /// The image format whose signature starts `prefix`, or nil when `prefix` is not (or not yet recognisably) an
    /// image. Pass at least ``bytesNeeded`` bytes, or the whole body when it is shorter, for a final answer.
    public static func detect(_ prefix: some Collection<UInt8>) -> Format? {
        let bytes = Array(prefix.prefix(bytesNeeded))
        return detectBinary(bytes) ?? (MarkupScanner.firstDeclaration(bytes).isSVGRoot ? .svg : nil)
    }

    /// The binary formats, most specific signatures first; nil for everything else, including markup.
    static func detectBinary(_ b: [UInt8]) -> Format? {
        if has(b, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if has(b, [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if has(b, Array("GIF87a".utf8)) || has(b, Array("GIF89a".utf8)) { return .gif }
        if has(b, Array("RIFF".utf8)) && has(b, Array("WEBP".utf8), at: 8) { return .webp }
        if has(b, [0xFF, 0x0A]) { return .jpegXL }
        if has(b, [0x00, 0x00, 0x00, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jpegXL }
        // An `ftyp` box decides on its own: an MP4 whose box size happens to read as an ICO header is still a video.
        if let brands = fileTypeBrands(b) { return isoMediaFormat(brands) }
        if has(b, Array("II".utf8) + [0x2A, 0x00]) || has(b, Array("MM".utf8) + [0x00, 0x2A]) { return .tiff }
        if isBMP(b) { return .bmp }
        if isIconDirectory(b) { return .ico }
        return nil
    }

    // MARK: ISO base media file format (AVIF, HEIC)

    /// The brands of an ISO BMFF `ftyp` box that starts the bytes: the major brand first, then the compatible brands
    /// that lie within the bytes. Nil when the bytes do not start with a plausible `ftyp` box.
    static func fileTypeBrands(_ b: [UInt8]) -> [String]? {
        guard b.count >= 16, has(b, Array("ftyp".utf8), at: 4) else { return nil }
        let size = Int(bigEndian32(b, at: 0))
        // A `ftyp` box is 8 header bytes, a major brand, a minor version, then whole 4-byte compatible brands.
        guard size >= 16, size % 4 == 0 else { return nil }
        var brands = [brand(b, at: 8)]
        var offset = 16
        while offset + 4 <= min(size, b.count) {
            brands.append(brand(b, at: offset))
            offset += 4
        }
        return brands
    }

    /// AVIF or HEIC from `ftyp` brands (major brand first), or nil for other ISO media such as MP4 video.
    ///
    /// The major brand wins; a generic HEIF major brand (`mif1`, `msf1`) defers to an AVIF compatible brand, as
    /// many AVIF encoders write `mif1` first.
    static func isoMediaFormat(_ brands: [String]) -> Format? {
        let avif: Set = ["avif", "avis"]
        let heicSpecific: Set = ["heic", "heix", "hevc", "hevx"]
        let heif = heicSpecific.union(["mif1", "msf1"])
        guard let major = brands.first else { return nil }
        if avif.contains(major) { return .avif }
        if heicSpecific.contains(major) { return .heic }
        if brands.contains(where: avif.contains) { return .avif }
        if brands.contains(where: heif.contains) { return .heic }
        return nil
    }

    // MARK: Weak signatures

    /// "BM" followed, at offset 14, by the size of a known DIB header (core, info, v2, v3, v4 or v5).
    static func isBMP(_ b: [UInt8]) -> Bool {
        guard b.count >= 18, has(b, Array("BM".utf8)) else { return false }
        return [12, 40, 52, 56, 108, 124].contains(littleEndian32(b, at: 14))
    }

    /// An ICO (type 1) or CUR (type 2) directory header with at least one image.
    static func isIconDirectory(_ b: [UInt8]) -> Bool {
        guard b.count >= 6, b[0] == 0, b[1] == 0, b[2] == 1 || b[2] == 2, b[3] == 0 else { return false }
        return b[4] != 0 || b[5] != 0
    }

    // MARK: Byte helpers

    /// Whether `signature` occurs in `bytes` at `offset` (false when `bytes` is too short).
    static func has(_ bytes: [UInt8], _ signature: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, bytes.count >= offset + signature.count else { return false }
        return bytes[offset..<offset + signature.count].elementsEqual(signature)
    }

    static func bigEndian32(_ b: [UInt8], at i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    static func littleEndian32(_ b: [UInt8], at i: Int) -> UInt32 {
        UInt32(b[i + 3]) << 24 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i])
    }

    /// Four bytes as a brand name; bytes outside printable ASCII become "?" so they never match a known brand.
    static func brand(_ b: [UInt8], at i: Int) -> String {
        String(decoding: b[i..<i + 4].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
