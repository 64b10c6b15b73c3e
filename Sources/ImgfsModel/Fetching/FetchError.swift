/// Why a download did not produce a complete image. Each case says what a log line and an error report should say.
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The final response had this non-2xx status.
    case httpStatus(Int)
    /// A connect, transfer or total timeout expired; the text says which.
    case timedOut(String)
    /// The host name could not be resolved.
    case unresolvable(String)
    /// The host could not be connected to.
    case unreachable(String)
    /// The connection ended before the announced length arrived.
    case truncated(expected: Int, received: Int)
    /// Any other transport failure (reset, TLS, protocol), as the HTTP client described it.
    case transport(String)
    /// The image changed between two attempts of one transfer after readers had bytes of the first, or a retry's
    /// answer did not continue the body it was asked to continue; the text says how. Never retried into a mix.
    case changed(String)
    /// The body is not a whole representation (an unasked 206, a compressed stream that ends before its end, an
    /// unsupported Content-Encoding); the text says why.
    case incomplete(String)
    /// Nobody wanted the bytes any more.
    case cancelled
    /// The filesystem is shutting down: every transfer under way is called off.
    case shutDown
    /// Not cached, and the cache-only policy forbids fetching.
    case notCached
    /// The body is larger than the limit (its size when announced).
    case tooLarge(size: Int?, limit: Int)
    /// The body does not start like any image format imgfs knows; the text says what it looks like.
    case notAnImage(String)
    /// The request was refused by imgfs's own policy (private network, host not allowed); the text says why.
    case refused(String)

    /// One line that says what failed, for the log and for the error attribute `imgfs why` reads.
    public var description: String {
        switch self {
        case .httpStatus(let status): "HTTP \(status) \(HTTPStatus.reason(status))"
        case .timedOut(let what): "timed out: \(what)"
        case .unresolvable(let why): "host not found: \(why)"
        case .unreachable(let why): "unreachable: \(why)"
        case .truncated(let expected, let received): "truncated body: \(received) of \(expected) bytes arrived"
        case .transport(let why): "transfer failed: \(why)"
        case .changed(let why): "the image changed between attempts: \(why)"
        case .incomplete(let why): "incomplete body: \(why)"
        case .cancelled: "cancelled"
        case .shutDown: "cancelled: the filesystem is shutting down"
        case .notCached: "not cached, and the policy (cache-only) forbids the network"
        case .tooLarge(let size?, let limit): "the image is \(size) bytes, over the limit of \(limit) (--max-size)"
        case .tooLarge(nil, let limit): "the body grew over the limit of \(limit) bytes (--max-size)"
        case .notAnImage(let what): "not an image: the body is \(what) (--allow-any-type serves it anyway)"
        case .refused(let why): "refused: \(why)"
        }
    }

    /// A short stable name of the kind of failure, for statistics (`http_404`, `timeout`, `not_an_image`, …).
    public var kind: String {
        switch self {
        case .httpStatus(let status): "http_\(status)"
        case .timedOut: "timeout"
        case .unresolvable: "dns"
        case .unreachable: "connect"
        case .truncated: "truncated"
        case .transport: "transport"
        case .changed: "changed"
        case .incomplete: "incomplete"
        case .cancelled: "cancelled"
        case .shutDown: "shutdown"
        case .notCached: "not_cached"
        case .tooLarge: "too_large"
        case .notAnImage: "not_an_image"
        case .refused: "refused"
        }
    }

    /// Whether the origin said the image is gone for good (404, 410): a cached copy is then dropped, not served.
    public var meansGone: Bool { self == .httpStatus(404) || self == .httpStatus(410) }

    /// Whether the host name could not be resolved.
    public var isUnresolvable: Bool {
        if case .unresolvable = self { return true }
        return false
    }
}

/// Reason phrases for the statuses imgfs reports.
public enum HTTPStatus {
    /// The standard reason phrase of `status`, or "" when it has none here.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 410: "Gone"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}
