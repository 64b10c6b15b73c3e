/// Limits and timeouts of the libcurl fetcher.
public struct FetcherConfiguration: Sendable {
    /// Transfers running at once; more wait in a FIFO queue.
    public var maxTransfers = 16
    /// Transfers running at once per `scheme://host:port`.
    public var maxTransfersPerHost = 6
    /// Seconds to establish a connection.
    public var connectTimeout = 10.0
    /// A transfer slower than `stallBytesPerSecond` for `stallSeconds` is abandoned.
    public var stallBytesPerSecond = 1024
    public var stallSeconds = 30
    /// Seconds a whole transfer may take.
    public var totalTimeout = 120.0
    /// Redirects followed at most.
    public var maxRedirects = 10
    /// The User-Agent header.
    public var userAgent = "imgfs"

    public init() {}
}
