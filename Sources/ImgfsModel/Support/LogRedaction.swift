import Logging

/// Shortens the query strings of the URLs in log text: `https://cdn/a.png?X-Amz-Signature=…` is logged as
/// `https://cdn/a.png?…`, so a log does not hold the tokens of signed links.
///
/// Guarantees: every `http://` or `https://` URL (any case), and every URL percent-encoded as a name under `img/`
/// (`https%3A%2F%2F…`, its `?` written `%3F`), keeps its scheme, host and path; the bytes from its `?` (or `%3F`)
/// up to its fragment (`#`, `%23`), a space, a quote, `<`, `>` or the end of the text become `…`. Text without URLs
/// is returned unchanged.
public enum LogRedaction {
    /// `text` with the query of every URL in it shortened to `…`.
    public static func shortenQueries(_ text: String) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "?")) || bytes.contains(UInt8(ascii: "%")) else { return text }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            guard let form = forms.first(where: { form in form.schemes.contains { matches($0, bytes, at: index) } })
            else {
                output.append(bytes[index])
                index += 1
                continue
            }
            // The URL up to its query: copied as it is.
            var end = index
            while end < bytes.count, !isTerminator(bytes[end]), !matches(form.query, bytes, at: end),
                !matches(form.fragment, bytes, at: end)
            {
                end += 1
            }
            output += bytes[index..<end]
            index = end
            guard index < bytes.count, matches(form.query, bytes, at: index) else { continue }
            output += bytes[index..<index + form.query.utf8.count] + Array("…".utf8)
            index += form.query.utf8.count
            while index < bytes.count, !isTerminator(bytes[index]), !matches(form.fragment, bytes, at: index) {
                index += 1
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// How a URL starts, where its query starts and where its fragment starts: plain, and encoded as a name.
    private static let forms: [(schemes: [String], query: String, fragment: String)] = [
        (["http://", "https://"], "?", "#"),
        (["http%3a%2f%2f", "https%3a%2f%2f"], "%3f", "%23")
    ]

    /// Whether `bytes` hold `pattern` (lower-case ASCII) at `index`, in any case.
    private static func matches(_ pattern: String, _ bytes: [UInt8], at index: Int) -> Bool {
        let pattern = pattern.utf8
        guard index + pattern.count <= bytes.count else { return false }
        for (offset, expected) in pattern.enumerated() {
            var byte = bytes[index + offset]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte += 32 }
            if byte != expected { return false }
        }
        return true
    }

    /// Bytes that end a URL in log text: white space and control characters, quotes, `<` and `>`.
    private static func isTerminator(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte == 0x7f || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
            || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">")
    }
}

/// A log handler that gives every event to `wrapped` with the query strings of the URLs in its message and metadata
/// shortened (``LogRedaction``). The daemon logs through it unless its log level is `debug` or `trace`.
public struct QueryShorteningLogHandler: LogHandler {
    /// The handler every event goes to once shortened.
    public var wrapped: any LogHandler

    /// A handler that shortens what it gives `handler`.
    public init(wrapping handler: any LogHandler) {
        wrapped = handler
        logLevel = handler.logLevel
    }

    /// Gives `event` to ``wrapped`` with the queries in its message and metadata shortened.
    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: LogRedaction.shortenQueries(event.message.description))
        event.metadata = event.metadata?.mapValues(Self.shortened)
        wrapped.log(event: event)
    }

    private static func shortened(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .array(let values): .array(values.map(shortened))
        case .dictionary(let values): .dictionary(values.mapValues(shortened))
        default: .string(LogRedaction.shortenQueries(value.description))
        }
    }

    /// The wrapped handler's metadata provider.
    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    /// The wrapped handler's metadata, unshortened (it is shortened per event).
    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    /// The wrapped handler's log level, kept here as well: every log call of the daemon reads it, and a stored
    /// value is the cheapest answer.
    public var logLevel: Logger.Level {
        didSet { wrapped.logLevel = logLevel }
    }

    /// One item of the wrapped handler's metadata.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }
}
