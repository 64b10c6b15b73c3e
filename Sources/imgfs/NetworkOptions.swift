import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsModel
import ImgfsPipeline

/// The network options of `imgfs mount`: limits, timeouts, retries and what may be contacted.
struct NetworkOptions: ParsableArguments {
    @Option(help: "Transfers running at once.")
    var maxTransfers = 16

    @Option(
        help: """
            Per host (scheme, host and port): transfers at once over HTTP/1.1 (one connection each); connections \
            over HTTP/2, each carrying up to --max-streams-per-connection transfers.
            """)
    var maxTransfersPerHost = 6

    @Option(help: "Transfers one HTTP/2 connection carries at once (never more than the server allows).")
    var maxStreamsPerConnection = 100

    @Option(help: "Threads receiving transfers, each with its own connections; by default one per core, at most 4.")
    var fetchThreads = FetcherConfiguration.defaultFetchThreads

    @Option(help: "How long to wait for a connection, e.g. 10s, 500ms.")
    var connectTimeout = "10s"

    @Option(help: "How long a transfer may stay below 1 KiB/s before it is abandoned, e.g. 30s.")
    var stallTimeout = "30s"

    @Option(help: "How long a whole transfer may take, e.g. 120s, 2m.")
    var timeout = "120s"

    @Option(help: "Retries of transient failures (connect errors, resets, 5xx, 429), with exponential backoff.")
    var retries = 3

    @Option(help: "The largest image served, e.g. 64M; larger ones fail with EFBIG.")
    var maxSize = "64M"

    @Flag(help: "Serve bodies that do not start like an image (HTML, JSON, …) instead of failing with EMEDIUMTYPE.")
    var allowAnyType = false

    @Flag(help: "Refuse loopback, link-local, private, CGNAT and ULA addresses (on by default with -o allow_other).")
    var denyPrivateNetworks = false

    @Option(help: "Fetch only from hosts matching this pattern (example.com, *.example.com); repeatable.")
    var allowHost: [String] = []

    @Flag(help: "Do not verify TLS certificates (logs a warning).")
    var insecure = false

    @Option(help: "Trust the CA certificates in this PEM file instead of the system's (e.g. a private CA).")
    var caFile: String?

    func validate() throws {
        guard maxTransfers > 0, maxTransfersPerHost > 0, maxStreamsPerConnection > 0, fetchThreads > 0 else {
            throw ValidationError("limits must be at least 1")
        }
        for (text, option) in [
            (connectTimeout, "--connect-timeout"), (stallTimeout, "--stall-timeout"), (timeout, "--timeout")
        ]
        where try OptionValue.duration(text, option) <= 0 {
            throw ValidationError("\(option) must be positive")
        }
        guard retries >= 0 else { throw ValidationError("--retries must be at least 0") }
        _ = try maxBytes()
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ValidationError("--ca-file: cannot read \(caFile)")
        }
        for pattern in allowHost where !AddressPolicy.isValidHostPattern(pattern) {
            throw ValidationError("--allow-host: not a host pattern: \(pattern)")
        }
    }

    func maxBytes() throws -> Int {
        guard let bytes = Quantity.bytes(maxSize), bytes > 0 else {
            throw ValidationError("--max-size: not a size: \(maxSize)")
        }
        return bytes
    }

    /// The fetcher's settings; private networks are refused when asked or when other users can reach the mount.
    func fetcherConfiguration(fuseOptions: [String], userAgent: String) throws -> FetcherConfiguration {
        var configuration = FetcherConfiguration()
        configuration.maxTransfers = maxTransfers
        configuration.maxTransfersPerHost = maxTransfersPerHost
        configuration.streamsPerConnection = maxStreamsPerConnection
        configuration.fetchThreads = fetchThreads
        configuration.connectTimeout = try OptionValue.duration(connectTimeout, "--connect-timeout")
        configuration.stallSeconds = max(
            1, Int((try OptionValue.duration(stallTimeout, "--stall-timeout")).rounded(.up)))
        configuration.totalTimeout = try OptionValue.duration(timeout, "--timeout")
        configuration.retries = retries
        configuration.insecure = insecure
        configuration.caFile = caFile.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        configuration.addressPolicy = AddressPolicy(
            denyPrivateNetworks: denyPrivateNetworks || fuseOptions.contains("allow_other"), allowedHosts: allowHost)
        configuration.userAgent = userAgent
        return configuration
    }

    func limits() throws -> Download.Limits {
        Download.Limits(maxSize: try maxBytes(), requireImage: !allowAnyType)
    }
}
