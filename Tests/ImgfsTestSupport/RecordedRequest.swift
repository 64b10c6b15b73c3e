import Foundation

/// One HTTP request as the `TestOrigin` received it, in arrival order.
///
/// Header names keep the client's spelling; `header(_:)` compares them
/// case-insensitively, as HTTP requires.
public struct RecordedRequest: Sendable {
    /// The request method exactly as sent (`GET`, `HEAD`, ...).
    public let method: String
    /// The request target exactly as sent, query string included (`/a/b?x=1`).
    public let path: String
    /// The HTTP version token from the request line (`HTTP/1.1`).
    public let version: String
    /// All header fields in the order received, values trimmed of surrounding whitespace.
    public let headers: [(String, String)]
    /// Sequence number of the connection the request arrived on (1 for the first connection).
    public let connectionID: Int

    /// Creates a recorded request; normally only the origin does this.
    public init(
        method: String, path: String, version: String = "HTTP/1.1",
        headers: [(String, String)] = [], connectionID: Int = 0
    ) {
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.connectionID = connectionID
    }

    /// The value of the first header field called `name` (compared case-insensitively),
    /// or nil when the request did not carry it.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.0.lowercased() == wanted }?.1
    }

    /// True when the client asked for the connection to be closed after this request
    /// (`Connection: close`, or HTTP/1.0 without `Connection: keep-alive`).
    public var wantsClose: Bool {
        let tokens = (header("Connection") ?? "").lowercased()
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("close") { return true }
        if version == "HTTP/1.0" { return !tokens.contains("keep-alive") }
        return false
    }
}
