import Foundation

/// The parts of a final 2xx response's header that imgfs uses.
public struct ResponseHead: Equatable, Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Content-Length, when the response announced it.
    public var contentLength: Int?
    /// Content-Type, when the response named one.
    public var contentType: String?
    /// ETag, when the response carried one.
    public var etag: String?
    /// Last-Modified, parsed.
    public var lastModified: Date?
    /// Cache-Control, as sent.
    public var cacheControl: String?
    /// Expires, parsed (nil also when malformed, which HTTP says means "already expired").
    public var expires: Date?
    /// Whether an Expires header was present at all.
    public var hasExpires = false
    /// Whether the body is content-encoded (compressed) on the wire.
    public var isEncoded = false
    /// Content-Encoding as sent, lower-cased, when it is not `identity`.
    public var contentEncoding: String?
    /// Content-Range of a 206 answer.
    public var contentRange: ContentRange?
    /// Date, parsed.
    public var date: Date?
    /// Why the body's length cannot be trusted (Content-Length values that disagree or are not numbers, RFC 9112
    /// §6.3): such a response is an error, never a body.
    public var framingProblem: String?
    /// The Content-Length announced on the wire (also for an encoded body), for the conflict check.
    private var announcedLength: Int?
    /// The numeric address of the connection the response came on (the proxy's, through a proxy), when known: kept
    /// with a cached image so that `--deny-private-networks` applies to it after a remount.
    public var remoteAddress: String?

    /// A head with the given fields; one left out was absent from the response.
    public init(
        status: Int, contentLength: Int? = nil, contentType: String? = nil, etag: String? = nil,
        lastModified: Date? = nil
    ) {
        self.status = status
        self.contentLength = contentLength
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Whether the response is a 304 Not Modified.
    public var isNotModified: Bool { status == 304 }

    /// The validator that proves a later response is this same representation, as an `If-Range` value: a strong
    /// ETag, else Last-Modified; nil when there is neither (a resume is then not allowed).
    public var strongValidator: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified.map(HTTPDate.format)
    }

    /// Fills the fields from header lines (`Name: value`), ignoring unknown and malformed ones.
    public mutating func apply(headerLine line: String) {
        apply(headerLine: Array(line.utf8)[...])
    }

    /// The same from the raw bytes of a line (as HTTP clients hand them over, with or without CRLF). Header names are
    /// matched ASCII case-insensitively; Foundation's trimming is avoided because it dominated the cost per response.
    public mutating func apply(headerLine line: ArraySlice<UInt8>) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: HeaderBytes.trimmed(line[..<colon]).map(HeaderBytes.lowercased), as: UTF8.self)
        let valueBytes = HeaderBytes.trimmed(line[(colon + 1)...])
        let value = String(decoding: valueBytes, as: UTF8.self)
        switch name {
        case "content-length":
            let length = applyContentLength(value)
            if !isEncoded { contentLength = length }
        case "content-encoding" where !["", "identity"].contains(value.lowercased()):
            // The length of an encoded body is not the image's size: that is known once the body is decoded.
            isEncoded = true
            contentLength = nil
            contentEncoding = value.lowercased()
        case "content-range": contentRange = ContentRange(value)
        case "content-type": contentType = value
        case "etag": etag = value
        case "last-modified": lastModified = PlausibleDate.check(HTTPDate.parse(value))
        case "cache-control": cacheControl = cacheControl.map { "\($0), \(value)" } ?? value
        case "expires":
            hasExpires = true
            expires = PlausibleDate.check(HTTPDate.parse(value))
        case "date": date = PlausibleDate.check(HTTPDate.parse(value))
        default: break
        }
    }

    /// One Content-Length field (a value, or a list of values): the length, or nil with ``framingProblem`` set when
    /// a value is not a number or disagrees with one seen before.
    private mutating func applyContentLength(_ value: String) -> Int? {
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
            let text = item.trimmingCharacters(in: .whitespaces)
            guard let length = Self.digits(text) else {
                framingProblem = "a Content-Length that is not a length (\"\(text.prefix(40))\")"
                return nil
            }
            if let seen = announcedLength, seen != length {
                framingProblem = "conflicting Content-Length values \(seen) and \(length)"
                return nil
            }
            announcedLength = length
        }
        return framingProblem == nil ? announcedLength : nil
    }

    /// The value of a string of ASCII digits that fits an Int, else nil.
    static func digits(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }
}

/// Byte helpers for header lines.
public enum HeaderBytes {
    /// `bytes` without leading and trailing spaces, tabs, CR and LF.
    public static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0d || byte == 0x0a }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return bytes[bytes.startIndex..<bytes.startIndex] }
        return bytes[first...last]
    }

    /// An ASCII upper-case letter in lower case; any other byte as it is.
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte
    }

    /// Whether `bytes` starts with `prefix` (given in lower case), ignoring ASCII case.
    public static func hasPrefix(_ bytes: ArraySlice<UInt8>, caseInsensitive prefix: String) -> Bool {
        var index = bytes.startIndex
        for expected in prefix.utf8 {
            guard index < bytes.endIndex, lowercased(bytes[index]) == expected else { return false }
            index += 1
        }
        return true
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, plus the obsolete RFC 850 and asctime forms).
///
/// The IMF-fixdate form every current server sends (`Sun, 06 Nov 1994 08:49:37 GMT`) is parsed by hand: building a
/// DateFormatter per header cost about 30 % of the fetching thread's CPU on small images. The obsolete forms fall
/// back to DateFormatter.
public enum HTTPDate {
    private static let formats = ["EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date `text` names, or nil.
    public static func parse(_ text: String) -> Date? {
        if let date = parseFixdate(text) { return date }
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `date` in IMF-fixdate form (clamped to years 1...9999).
    public static func format(_ date: Date) -> String {
        let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        // Years 1...9999 only: a date outside (a corrupt record's) is written as the nearest end.
        let since1970 = Int(saturating: date.timeIntervalSince1970.rounded(.down))
        let seconds = min(max(since1970, -62_135_596_800), 253_402_300_799)
        let day = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let (year, month, dayOfMonth) = civil(fromDays: day)
        let time = seconds - day * 86400
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[((day % 7) + 7) % 7]), \(two(dayOfMonth)) \(months[month - 1]) \(year) "
            + "\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, or nil when `text` is not exactly that form.
    private static func parseFixdate(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), text.hasSuffix(" GMT") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for byte in bytes[from..<from + count] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        let monthName = String(decoding: bytes[8..<11], as: UTF8.self)
        guard let day = number(5, 2), let month = months.firstIndex(of: monthName), let year = number(12, 4),
            let hour = number(17, 2), let minute = number(20, 2), let second = number(23, 2),
            (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        let days = daysFromCivil(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86400 + hour * 3600 + minute * 60 + second))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }

    /// The proleptic Gregorian date of a day number since 1970-01-01.
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

// MARK: - ImageMetadata

/// What is known about an image once its size is: enough to answer `stat`.
public struct ImageMetadata: Equatable, Sendable {
    /// The size in bytes: Content-Length, or the length of the whole body when none was announced.
    public var size: Int
    /// Content-Type, when the origin named one.
    public var contentType: String?
    /// ETag, when the origin gave one.
    public var etag: String?
    /// Last-Modified; nil when the origin did not say.
    public var lastModified: Date?
    /// When the response header arrived.
    public var fetchedAt: Date

    /// Metadata with the given fields; `fetchedAt` defaults to now.
    public init(
        size: Int, contentType: String? = nil, etag: String? = nil, lastModified: Date? = nil,
        fetchedAt: Date = Date()
    ) {
        self.size = size
        self.fetchedAt = fetchedAt
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
    }
}

// MARK: - ImageMetadata+ModificationTime

extension ImageMetadata {
    /// The file's mtime: Last-Modified when the origin sent it, else the time the image was first fetched (kept across
    /// refetches of the same content), in whole seconds, so that `stat`, a thumbnail's `Thumb::MTime` and a remount
    /// agree to the second.
    public var modificationTime: Date {
        let seconds = (lastModified ?? fetchedAt).timeIntervalSince1970
        return Date(timeIntervalSince1970: seconds.isFinite ? seconds.rounded(.down) : 0)
    }

    /// ``modificationTime`` as whole seconds since 1970, as `Thumb::MTime` writes it.
    public var modificationSeconds: Int {
        Int(saturating: modificationTime.timeIntervalSince1970)
    }
}

// MARK: - ImageSignature

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

// MARK: - Saturating

/// Conversions of numbers that came from outside (HTTP heads, Redis values, list and policy files) into integers.
///
/// Guarantees: never traps. `Int(someDouble)` traps on NaN, infinities and values beyond `Int`'s range; every
/// conversion of an outside number goes through here (or through a range check of its own) instead.
extension Int {
    /// `value` rounded toward zero and clamped to `Int.min...Int.max`; NaN gives 0.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775_807e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775_808e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }
}

/// HTTP's `delta-seconds` (RFC 9111 §1.2.2), as `max-age`, `Age` and `Retry-After` carry them.
public enum DeltaSeconds {
    /// The largest value a cache has to represent: larger ones (and ones that overflow) count as this.
    public static let maximum = 2_147_483_648

    /// The seconds in `text` (one or more ASCII digits, nothing else), at most ``maximum``; nil otherwise.
    public static func parse<Text: StringProtocol>(_ text: Text) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = Swift.min(maximum, value * 10 + Int(byte - 0x30))
        }
        return value
    }
}

/// The dates imgfs accepts from outside (HTTP dates, stored records): finite, from 1970 up to year 9999.
public enum PlausibleDate {
    /// 9999-12-31T23:59:59Z.
    public static let latest = Date(timeIntervalSince1970: 253_402_300_799)

    /// Whether `date` is in 1970...9999.
    public static func contains(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds.isFinite && seconds >= 0 && date <= latest
    }

    /// `date` when it is plausible, nil otherwise.
    public static func check(_ date: Date?) -> Date? {
        date.flatMap { contains($0) ? $0 : nil }
    }
}
