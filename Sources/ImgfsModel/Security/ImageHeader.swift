/// What an image's first bytes say about it: its format, its stored width and height, and its EXIF orientation.
///
/// Guarantees: ``parse(_:)`` reads at most ``bytesNeeded`` leading bytes, never traps on short, malformed or hostile
/// input (every offset and length is checked against the bytes before it is used, and no arithmetic can overflow), and
/// states only what the bytes say: the format when ``ImageSignature`` recognises it, a width and height only when a
/// header that holds them lies within the bytes (both positive, or neither), an orientation only when it is 1–8.
/// Width and height are the stored dimensions, before the orientation is applied.
public struct ImageHeader: Equatable, Sendable {
    /// The format, as ``ImageSignature`` names it.
    public var format: ImageSignature.Format
    /// The stored width in pixels; nil when the bytes do not say.
    public var width: Int?
    /// The stored height in pixels; nil when the bytes do not say.
    public var height: Int?
    /// The EXIF orientation (1 upright … 8), from a JPEG's EXIF IFD0 or an AVIF/HEIF `irot`; nil when not stated.
    public var orientation: Int?

    /// The most leading bytes looked at: 64 KiB, enough for a JPEG's frame header behind a large EXIF segment.
    public static let bytesNeeded = 65536

    /// A header with the given fields (a width or height that is not positive is dropped, with its partner).
    public init(format: ImageSignature.Format, width: Int? = nil, height: Int? = nil, orientation: Int? = nil) {
        self.format = format
        if let width, let height, width > 0, height > 0 {
            self.width = width
            self.height = height
        }
        self.orientation = orientation.flatMap { (1...8).contains($0) ? $0 : nil }
    }

    /// The header of the image that `prefix` starts, or nil when the bytes are not (or not yet recognisably) an image.
    public static func parse(_ prefix: some Collection<UInt8>) -> ImageHeader? {
        let reader = ByteReader(Array(prefix.prefix(bytesNeeded)))
        guard let format = ImageSignature.detect(reader.bytes.prefix(ImageSignature.bytesNeeded)) else { return nil }
        switch format {
        case .png: return png(reader)
        case .gif: return gif(reader)
        case .jpeg: return jpeg(reader)
        case .webp: return webp(reader)
        case .bmp: return bmp(reader)
        case .avif, .heic: return isoMedia(reader, format: format)
        default: return ImageHeader(format: format)
        }
    }

    // MARK: - PNG, GIF, BMP

    static func png(_ r: ByteReader) -> ImageHeader {
        // Signature (8), then the IHDR chunk: length (4), "IHDR", width (4), height (4), big-endian.
        guard r.matches("IHDR", at: 12), let width = r.u32be(16), let height = r.u32be(20) else {
            return ImageHeader(format: .png)
        }
        return ImageHeader(format: .png, width: Int(width), height: Int(height))
    }

    static func gif(_ r: ByteReader) -> ImageHeader {
        guard let width = r.u16le(6), let height = r.u16le(8) else { return ImageHeader(format: .gif) }
        return ImageHeader(format: .gif, width: Int(width), height: Int(height))
    }

    static func bmp(_ r: ByteReader) -> ImageHeader {
        guard let dibSize = r.u32le(14) else { return ImageHeader(format: .bmp) }
        if dibSize == 12 {
            guard let width = r.u16le(18), let height = r.u16le(20) else { return ImageHeader(format: .bmp) }
            return ImageHeader(format: .bmp, width: Int(width), height: Int(height))
        }
        guard let width = r.u32le(18), let height = r.u32le(22) else { return ImageHeader(format: .bmp) }
        // Signed 32-bit values; a negative height means the rows are stored top-down.
        let signedHeight = Int(Int32(bitPattern: height))
        return ImageHeader(format: .bmp, width: Int(Int32(bitPattern: width)), height: abs(signedHeight))
    }

    // MARK: - WebP

    static func webp(_ r: ByteReader) -> ImageHeader {
        switch r.fourCC(12) {
        case "VP8 ":
            // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height with 2 bits of scale each.
            guard r.u8(23) == 0x9D, r.u8(24) == 0x01, r.u8(25) == 0x2A, let width = r.u16le(26),
                let height = r.u16le(28)
            else { break }
            return ImageHeader(format: .webp, width: Int(width & 0x3FFF), height: Int(height & 0x3FFF))
        case "VP8L":
            // Signature 0x2F, then 14 bits of width - 1 and 14 bits of height - 1, little-endian.
            guard r.u8(20) == 0x2F, let bits = r.u32le(21) else { break }
            return ImageHeader(
                format: .webp, width: Int(bits & 0x3FFF) + 1, height: Int((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            // Flags (1), reserved (3), canvas width - 1 and height - 1 in 24 bits each.
            guard let width = r.u24le(24), let height = r.u24le(27) else { break }
            return ImageHeader(format: .webp, width: Int(width) + 1, height: Int(height) + 1)
        default:
            break
        }
        return ImageHeader(format: .webp)
    }

    // MARK: - JPEG

    static func jpeg(_ r: ByteReader) -> ImageHeader {
        var header = ImageHeader(format: .jpeg)
        var offset = 2
        while offset < r.count {
            guard r.u8(offset) == 0xFF else { return header }  // Not at a marker: the stream is damaged.
            var markerAt = offset + 1
            while r.u8(markerAt) == 0xFF { markerAt += 1 }  // Fill bytes.
            guard let marker = r.u8(markerAt) else { return header }
            let segment = markerAt + 1
            switch marker {
            case 0x01, 0xD0...0xD8:  // Markers that stand alone.
                offset = segment
                continue
            case 0xD9, 0xDA:  // End of image or start of scan: no frame header before the data.
                return header
            default:
                break
            }
            guard let length = r.u16be(segment), length >= 2 else { return header }
            // A segment cut off by the end of the bytes is read as far as it goes (an EXIF segment may fill 64 KiB).
            let cut = Int(length) > r.count - segment
            let end = cut ? r.count : segment + Int(length)
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                // Frame header: precision (1), height (2), width (2).
                if let height = r.u16be(segment + 3), let width = r.u16be(segment + 5), segment + 7 <= end {
                    let orientation = header.orientation
                    header = ImageHeader(format: .jpeg, width: Int(width), height: Int(height))
                    header.orientation = orientation
                }
                return header
            case 0xE1 where header.orientation == nil && r.matches("Exif\0\0", at: segment + 2):
                header.orientation = exifOrientation(r, tiff: segment + 8, end: end)
            default:
                break
            }
            if cut { return header }
            offset = end
        }
        return header
    }

    /// The orientation tag (0x0112) of the IFD0 of the TIFF structure at `tiff`, read within `..<end`; 1–8 or nil.
    static func exifOrientation(_ r: ByteReader, tiff: Int, end: Int) -> Int? {
        let bounded = r.limited(to: end)
        let little: Bool
        if bounded.matches("II", at: tiff) {
            little = true
        } else if bounded.matches("MM", at: tiff) {
            little = false
        } else {
            return nil
        }
        func u16(_ at: Int) -> UInt16? { little ? bounded.u16le(at) : bounded.u16be(at) }
        func u32(_ at: Int) -> UInt32? { little ? bounded.u32le(at) : bounded.u32be(at) }
        guard u16(tiff + 2) == 42, let ifdOffset = u32(tiff + 4), Int(ifdOffset) < bounded.count - tiff,
            let entries = u16(tiff + Int(ifdOffset))
        else { return nil }
        let first = tiff + Int(ifdOffset) + 2
        for index in 0..<Int(entries) {
            let entry = first + index * 12
            guard let tag = u16(entry), let type = u16(entry + 2) else { return nil }
            guard tag == 0x0112 else { continue }
            guard type == 3, let value = u16(entry + 8) else { return nil }  // SHORT, in the value field.
            return (1...8).contains(value) ? Int(value) : nil
        }
        return nil
    }

    // MARK: - AVIF and HEIF (ISO base media file format)

    /// One box: its type and where its payload lies.
    struct Box {
        let type: String
        let payload: Range<Int>
        /// False when the bytes end inside the box.
        var whole = true
    }

    /// The boxes directly inside `range`, in order, up to the first that does not fit (its rest is cut off).
    static func boxes(_ r: ByteReader, in range: Range<Int>) -> [Box] {
        var found: [Box] = []
        var offset = range.lowerBound
        while offset <= range.upperBound - 8, found.count < 4096 {
            guard let size32 = r.u32be(offset), let type = r.fourCC(offset + 4) else { break }
            var headerSize = 8
            var size = Int(size32)
            if size32 == 1 {
                guard let large = r.u64be(offset + 8) else { break }
                headerSize = 16
                size = large > UInt64(range.upperBound - offset) ? range.upperBound - offset + 1 : Int(large)
            } else if size32 == 0 {
                size = range.upperBound - offset
            }
            guard size >= headerSize, size <= range.upperBound - offset else {
                // A box cut off by the end of the bytes: its payload so far, when its header is whole.
                if size >= headerSize, offset + headerSize <= range.upperBound {
                    found.append(Box(type: type, payload: (offset + headerSize)..<range.upperBound, whole: false))
                }
                break
            }
            found.append(Box(type: type, payload: (offset + headerSize)..<(offset + size)))
            offset += size
        }
        return found
    }

    static func isoMedia(_ r: ByteReader, format: ImageSignature.Format) -> ImageHeader {
        let unknown = ImageHeader(format: format)
        guard let meta = boxes(r, in: 0..<r.count).first(where: { $0.type == "meta" }),
            meta.payload.count >= 4
        else { return unknown }
        // `meta` is a full box: version and flags come first.
        let inside = boxes(r, in: (meta.payload.lowerBound + 4)..<meta.payload.upperBound)
        var primary: UInt32?
        if let pitm = inside.first(where: { $0.type == "pitm" }), let version = r.u8(pitm.payload.lowerBound) {
            let at = pitm.payload.lowerBound + 4
            primary = version == 0 ? r.u16be(at).map(UInt32.init) : r.u32be(at)
        }
        guard let iprp = inside.first(where: { $0.type == "iprp" }) else { return unknown }
        let iprpBoxes = boxes(r, in: iprp.payload)
        guard let ipco = iprpBoxes.first(where: { $0.type == "ipco" }) else { return unknown }
        let properties = boxes(r, in: ipco.payload)
        // The primary item's properties (1-based indices into ipco); every property when that cannot be told.
        var chosen = Array(properties.indices)
        if let primary, let ipma = iprpBoxes.first(where: { $0.type == "ipma" }),
            let associated = associations(r, ipma: ipma, item: primary)
        {
            chosen = associated.compactMap { properties.indices.contains($0 - 1) ? $0 - 1 : nil }
        } else if !iprp.whole || properties.filter({ $0.type == "ispe" }).count > 1 {
            // Several sizes (a grid and its tiles, an alpha plane), or some not seen, and no telling which is the
            // image's.
            chosen = chosen.filter { properties[$0].type != "ispe" }
        }
        var header = unknown
        for index in chosen {
            let box = properties[index]
            let at = box.payload.lowerBound
            if box.type == "ispe", header.width == nil, let width = r.u32be(at + 4), let height = r.u32be(at + 8),
                at + 12 <= box.payload.upperBound
            {
                let orientation = header.orientation
                header = ImageHeader(format: format, width: Int(width), height: Int(height))
                header.orientation = orientation
            }
            if box.type == "irot", header.orientation == nil, let angle = r.u8(at), at < box.payload.upperBound {
                // Anti-clockwise quarter turns to display; EXIF says how to turn the stored image upright.
                header.orientation = [1, 8, 3, 6][Int(angle & 3)]
            }
        }
        return header
    }

    /// The 1-based property indices `ipma` associates with `item`, or nil when it names none or cannot be read.
    static func associations(_ r: ByteReader, ipma: Box, item: UInt32) -> [Int]? {
        let start = ipma.payload.lowerBound
        guard let version = r.u8(start), let flags = r.u8(start + 3), let count = r.u32be(start + 4) else {
            return nil
        }
        let limited = r.limited(to: ipma.payload.upperBound)
        var offset = start + 8
        var remaining = count
        while remaining > 0 {
            remaining -= 1
            let id: UInt32?
            if version < 1 {
                id = limited.u16be(offset).map(UInt32.init)
                offset += 2
            } else {
                id = limited.u32be(offset)
                offset += 4
            }
            guard let id, let associationCount = limited.u8(offset) else { return nil }
            offset += 1
            var indices: [Int] = []
            for _ in 0..<Int(associationCount) {
                if flags & 1 == 1 {
                    guard let value = limited.u16be(offset) else { return nil }
                    indices.append(Int(value & 0x7FFF))
                    offset += 2
                } else {
                    guard let value = limited.u8(offset) else { return nil }
                    indices.append(Int(value & 0x7F))
                    offset += 1
                }
            }
            if id == item { return indices }
        }
        return nil
    }
}

/// Bounds-checked reads of integers from bytes: every read past the end (or at a negative offset) is nil.
struct ByteReader {
    let bytes: [UInt8]
    /// How many bytes reads may reach (at most `bytes.count`).
    let count: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        count = bytes.count
    }

    private init(bytes: [UInt8], count: Int) {
        self.bytes = bytes
        self.count = count
    }

    /// The same bytes, with reads limited to `..<end` (never beyond the bytes).
    func limited(to end: Int) -> ByteReader { ByteReader(bytes: bytes, count: max(0, min(count, end))) }

    /// Whether `n` bytes from `offset` lie within the readable bytes (no overflow for any `offset`).
    func fits(_ offset: Int, _ n: Int) -> Bool { offset >= 0 && offset <= count - n }

    func u8(_ offset: Int) -> UInt8? { fits(offset, 1) ? bytes[offset] : nil }

    func u16be(_ offset: Int) -> UInt16? {
        fits(offset, 2) ? UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]) : nil
    }

    func u16le(_ offset: Int) -> UInt16? {
        fits(offset, 2) ? UInt16(bytes[offset + 1]) << 8 | UInt16(bytes[offset]) : nil
    }

    func u24le(_ offset: Int) -> UInt32? {
        guard fits(offset, 3) else { return nil }
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    func u32be(_ offset: Int) -> UInt32? {
        guard fits(offset, 4) else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    func u32le(_ offset: Int) -> UInt32? {
        guard fits(offset, 4) else { return nil }
        return (0..<4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    func u64be(_ offset: Int) -> UInt64? {
        guard fits(offset, 8) else { return nil }
        return (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[offset + $1]) }
    }

    /// Four bytes as ASCII text, or nil past the end.
    func fourCC(_ offset: Int) -> String? {
        guard fits(offset, 4) else { return nil }
        return String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
    }

    /// Whether `text`'s bytes stand at `offset`.
    func matches(_ text: String, at offset: Int) -> Bool {
        let expected = Array(text.utf8)
        return fits(offset, expected.count) && bytes[offset..<(offset + expected.count)].elementsEqual(expected)
    }
}
