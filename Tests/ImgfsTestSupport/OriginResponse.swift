/// The `Content-Length` policy of an `OriginResponse` (also spelled `OriginResponse.ContentLengthMode`).
public typealias ContentLengthMode = OriginResponse.ContentLengthMode

/// What a `TestOrigin` sends back for a request, including fault-injection knobs.
///
/// The origin always sends a `Date` header (unless `headers` has one), a
/// `Content-Length` chosen by `contentLength`, a `Connection` header, and then
/// `headers` in the given order. Body framing, pacing and faults are applied
/// exactly as described on each property.
public struct OriginResponse: Sendable {
    /// How the `Content-Length` header is produced.
    public enum ContentLengthMode: Sendable, Equatable {
        /// `Content-Length` equals the body size (keep-alive stays possible).
        case exact
        /// No `Content-Length`; the body ends when the origin closes the connection.
        case omitted
        /// Send this value whatever the body is; the whole body is still written and
        /// the connection is closed afterwards when the value differs from the body size.
        case override(Int)
    }

    /// The status code, e.g. 200.
    public var status: Int
    /// The reason phrase; nil means the standard phrase for `status`.
    public var reason: String?
    /// Extra header fields, sent after the origin's own ones, in this order
    /// (`ETag`, `Last-Modified`, `Cache-Control`, `Retry-After`, `Location`, ...).
    /// A `Date` here replaces the origin's own; framing headers (`Content-Length`,
    /// `Transfer-Encoding`, `Connection`) belong to the knobs below, not here.
    public var headers: [(String, String)]
    /// The full body (what a successful GET would receive).
    public var body: [UInt8]
    /// Seconds to wait before sending anything at all (a slow origin holding its headers).
    public var headerDelay: Double
    /// Seconds to wait between the end of the headers and the first body byte.
    public var firstByteDelay: Double
    /// When set, the body is dripped at this many bytes per second (paced on a
    /// monotonic clock, so the whole body takes `body.count / bytesPerSecond` seconds).
    public var bytesPerSecond: Int?
    /// How `Content-Length` is sent; see `ContentLengthMode`.
    public var contentLength: ContentLengthMode
    /// Use `Transfer-Encoding: chunked` with real chunk framing (no `Content-Length`
    /// unless `contentLength` is `.override`).
    public var chunked: Bool
    /// Send only this many body bytes, then close the connection cleanly (FIN).
    public var truncateAfter: Int?
    /// Send this many body bytes, then reset the connection (RST; the client sees ECONNRESET).
    public var resetAfter: Int?
    /// Close the connection after this response even if the client wants keep-alive.
    public var closeAfterResponse: Bool

    /// Creates a response; every parameter has a default, so `OriginResponse()` is an
    /// empty `200 OK`.
    public init(
        status: Int = 200, reason: String? = nil, headers: [(String, String)] = [],
        body: [UInt8] = [], headerDelay: Double = 0, firstByteDelay: Double = 0,
        bytesPerSecond: Int? = nil, contentLength: ContentLengthMode = .exact,
        chunked: Bool = false, truncateAfter: Int? = nil, resetAfter: Int? = nil,
        closeAfterResponse: Bool = false
    ) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.headerDelay = headerDelay
        self.firstByteDelay = firstByteDelay
        self.bytesPerSecond = bytesPerSecond
        self.contentLength = contentLength
        self.chunked = chunked
        self.truncateAfter = truncateAfter
        self.resetAfter = resetAfter
        self.closeAfterResponse = closeAfterResponse
    }

    // MARK: - Convenience constructors

    /// `200 OK` with `body` and a `Content-Type` header.
    public static func ok(_ body: [UInt8], contentType: String = "application/octet-stream") -> OriginResponse {
        OriginResponse(status: 200, headers: [("Content-Type", contentType)], body: body)
    }

    /// A response with `code` and a short `text/plain` body naming the status
    /// (an empty body for codes that may not carry one: 1xx, 204, 304).
    public static func status(_ code: Int) -> OriginResponse {
        let text = OriginResponse.mayHaveBody(code) ? Array("\(code) \(reasonPhrase(code))\n".utf8) : []
        return OriginResponse(status: code, headers: [("Content-Type", "text/plain; charset=utf-8")], body: text)
    }

    /// A redirect (`code`, default 302) with a `Location` header and a short text body.
    public static func redirect(_ code: Int = 302, to location: String) -> OriginResponse {
        var response = status(code)
        response.headers.append(("Location", location))
        return response
    }

    // MARK: - Derived values

    /// The reason phrase that will be sent: `reason`, or the standard phrase for `status`.
    public var effectiveReason: String { reason ?? OriginResponse.reasonPhrase(status) }

    /// The standard reason phrase for a status code ("Unknown" for unlisted codes).
    public static func reasonPhrase(_ code: Int) -> String {
        switch code {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Unknown"
        }
    }

    /// False for status codes whose responses never carry a body (1xx, 204, 304).
    static func mayHaveBody(_ code: Int) -> Bool {
        !(100..<200).contains(code) && code != 204 && code != 304
    }
}
