import Foundation
import ImgfsModel

/// Limits, timeouts, retries and network policy of the libcurl fetcher.
public struct FetcherConfiguration: Sendable {
    /// Transfers running at once; more wait in a FIFO queue.
    public var maxTransfers = 16
    /// Transfers running at once per `scheme://host:port` over HTTP/1.1 (one connection each); on a host that
    /// answered over HTTP/2 it bounds connections, each carrying up to `streamsPerConnection` transfers.
    public var maxTransfersPerHost = 6
    /// Transfers one HTTP/2 connection carries at once (libcurl never exceeds the server's own limit).
    public var streamsPerConnection = 100
    /// Threads receiving transfers, each with a libcurl multi handle (and connection cache) of its own.
    public var fetchThreads = FetcherConfiguration.defaultFetchThreads
    /// One fetch thread per core, at most four: one thread receiving (socket reads, copies into memory files) was
    /// the bottleneck of cold large reads, and more threads than cores only add connections.
    public static var defaultFetchThreads: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)) }
    /// Seconds to establish a connection.
    public var connectTimeout = 10.0
    /// A transfer slower than `stallBytesPerSecond` for `stallSeconds` is abandoned.
    public var stallBytesPerSecond = 1024
    /// How many seconds a transfer may stay slower than `stallBytesPerSecond` before it is abandoned.
    public var stallSeconds = 30
    /// Seconds a whole transfer may take.
    public var totalTimeout = 120.0
    /// Redirects followed at most.
    public var maxRedirects = 10
    /// Retries of transient failures (connect errors, resets, truncated bodies, 5xx, 429).
    public var retries = 3
    /// The first retry waits about this long (with jitter); each later one twice as long.
    public var retryBaseDelay = 0.25
    /// The longest Retry-After honoured, in seconds.
    public var maxRetryAfter = 30.0
    /// Which hosts and addresses may be contacted.
    public var addressPolicy = AddressPolicy()
    /// Skip TLS certificate and host name verification (`--insecure`).
    public var insecure = false
    /// A PEM file of CA certificates trusted instead of the system's (`--ca-file`); nil: the system's.
    public var caFile: String?
    /// The User-Agent header, unless a rule sets another.
    public var userAgent = "imgfs"
    /// The proxy (`http://`, `https://`, `socks5://`, `socks5h://` URL); nil: libcurl's environment variables
    /// (`http_proxy`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`) decide, as in curl.
    public var proxy: String?
    /// Hosts reached without the proxy (comma-separated, `*` for all), as curl's `--noproxy`.
    public var noProxy: String?
    /// Bytes curl receives per read from a connection (its default is 16 KiB): larger reads mean fewer calls into
    /// imgfs per large image (cold large files went from about 0.66× to 0.9× of curl's own speed). Memory: one such
    /// buffer per running transfer.
    public var receiveBufferSize = 512 * 1024
    /// Seconds a lookup's probe (``FetchRequest/pausesAtProbe``) stays paused after its first bytes, waiting for an
    /// open to want the rest (`cat` opens within microseconds of its lookup), before it ends there as a probe.
    public var probeGrace = 0.5
    /// Seconds a lookup's probe that expects an open (``FetchRequest/expectsOpen``) goes on past its first bytes before
    /// it pauses: on two busy cores the open of `os.open` or `cp` reaches imgfs 0.25-5 ms after its lookup's answer,
    /// and a GET paused that long made cold large files over loopback 8 % slower; 10 ms of bytes are dropped again
    /// when no open comes.
    public var openWindow = 0.010
    /// Bytes past its first ones a lookup's probe that expects an open takes at most in ``openWindow`` (a stat by path
    /// over a fast link then costs at most this much more than the probe).
    public var openWindowBytes = 2 << 20
    /// Seconds a paused lookup's probe is held even while a transfer someone waits for waits for its place: the open
    /// of a program that reads what it looked up comes that soon even on a busy machine, and it saves a second request.
    public var crowdedProbeHold = 0.03

    /// The defaults above; the daemon sets each from its options.
    public init() {}
}
