import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsModel
import ImgfsPipeline

/// The network options of `imgfs mount`: what is served and what may be contacted (how many transfers, timeouts and
/// retries are `--tune` keys).
struct NetworkOptions: ParsableArguments {
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
    func fetcherConfiguration(fuseOptions: [String], tuning: Tuning, userAgent: String) -> FetcherConfiguration {
        var configuration = FetcherConfiguration()
        configuration.maxTransfers = tuning.maxTransfers
        configuration.maxTransfersPerHost = tuning.maxTransfersPerHost
        configuration.streamsPerConnection = tuning.maxStreamsPerConnection
        configuration.fetchThreads = tuning.fetchThreads
        configuration.connectTimeout = tuning.connectTimeout
        configuration.stallSeconds = max(1, Int(tuning.stallTimeout.rounded(.up)))
        configuration.totalTimeout = tuning.timeout
        configuration.retries = tuning.retries
        configuration.insecure = insecure
        configuration.caFile = caFile.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        configuration.addressPolicy = addressPolicy(fuseOptions: fuseOptions)
        configuration.userAgent = userAgent
        return configuration
    }

    /// What may be contacted: private networks are refused when asked or when other users can reach the mount.
    func addressPolicy(fuseOptions: [String]) -> AddressPolicy {
        AddressPolicy(
            denyPrivateNetworks: denyPrivateNetworks || fuseOptions.contains("allow_other"), allowedHosts: allowHost)
    }

    func limits() throws -> Download.Limits {
        Download.Limits(maxSize: try maxBytes(), requireImage: !allowAnyType)
    }
}
