import Foundation

/// The parts of a final 2xx response's header that imgfs uses.
public struct ResponseHead: Equatable, Sendable {
    public var status: Int
    /// Content-Length, when the response announced it.
    public var contentLength: Int?
    public var contentType: String?
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
    /// Date, parsed.
    public var date: Date?

    public init(status: Int, contentLength: Int? = nil, contentType: String? = nil, etag: String? = nil,
                lastModified: Date? = nil) {
        self.status = status
        self.contentLength = contentLength
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Whether the response is a 304 Not Modified.
    public var isNotModified: Bool { status == 304 }

    /// Fills the fields from header lines (`Name: value`), ignoring unknown and malformed ones.
    public mutating func apply(headerLine line: String) {
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        switch name {
        case "content-length" where !isEncoded: contentLength = Int(value).flatMap { $0 >= 0 ? $0 : nil }
        case "content-encoding" where !["", "identity"].contains(value.lowercased()):
            // The length of an encoded body is not the image's size: that is known once the body is decoded.
            isEncoded = true
            contentLength = nil
        case "content-type": contentType = value
        case "etag": etag = value
        case "last-modified": lastModified = HTTPDate.parse(value)
        case "cache-control": cacheControl = cacheControl.map { "\($0), \(value)" } ?? value
        case "expires":
            hasExpires = true
            expires = HTTPDate.parse(value)
        case "date": date = HTTPDate.parse(value)
        default: break
        }
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, plus the obsolete RFC 850 and asctime forms).
public enum HTTPDate {
    private static let formats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    /// The date `text` names, or nil.
    public static func parse(_ text: String) -> Date? {
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `date` in IMF-fixdate form.
    public static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
