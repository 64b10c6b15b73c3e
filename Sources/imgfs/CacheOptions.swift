import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsPipeline

/// The caching options of `imgfs mount`: where, how much, and for how long.
struct CacheOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Where imgfs keeps its cache and files (default: $XDG_CACHE_HOME/imgfs, else ~/.cache/imgfs); it must be "
                + "yours and writable by you alone."))
    var cacheDir: String?

    @Option(
        help: ArgumentHelp(
            "Memory cache budget, e.g. 256M (default: the smaller of 256 MiB and 10% of RAM; "
                + "never more than an eighth of the memory cgroup limit)."))
    var memoryLimit: String?

    @Option(
        help: """
            Disk cache size cap, e.g. 1G (images and thumbnails; thumbnails at most an eighth of it); 0: no disk \
            cache, nothing is written under the cache directory but the log.
            """)
    var diskLimit = "1G"

    @Option(help: "How long a fetched image stays fresh, e.g. 24h, 30m, 7d, 3600.")
    var expire = "24h"

    @Flag(help: "Let HTTP Cache-Control and Expires decide freshness (default: a fixed --expire for every image).")
    var cacheControl = false

    @Option(
        help: "cache-else-load (default), cache-only (never use the network) or reload (fetch again once per mount).")
    var policy = CachePolicy.cacheElseLoad.rawValue

    @Option(
        help: """
            How long a 404, 410 or unresolvable host is remembered, e.g. 60s (other failures: --tune failure-memory, \
            never longer); 0: every failure only for the second one use takes (its stat, open and reads), so the next \
            open tries again.
            """)
    var negativeTtl = "60s"

    @Option(
        help: """
            Remove images from the disk cache once they have been expired this long, e.g. 30d (default: keep them for \
            offline use until --disk-limit evicts them).
            """)
    var maxStale: String?

    func validate() throws {
        _ = try memoryBudget()
        _ = try diskBudget()
        _ = try repositoryConfiguration()
        _ = try keepExpired()
    }

    func memoryBudget() throws -> Int {
        guard let memoryLimit else { return min(256 << 20, Int(ProcessInfo.processInfo.physicalMemory / 10)) }
        guard let bytes = Quantity.bytes(memoryLimit) else {
            throw ValidationError("--memory-limit: not a size: \(memoryLimit)")
        }
        return bytes
    }

    /// The cache directory, made ready for use (see ``CacheDirectory/prepare(_:)``).
    func preparedDirectory() throws -> URL {
        let directory = URL(fileURLWithPath: cacheDir ?? CacheDirectory.defaultPath)
        try CacheDirectory.prepare(directory)
        return directory
    }

    /// Whether images and variants are kept on disk (`--disk-limit` above 0).
    var usesDisk: Bool { (try? diskBudget()) != 0 }

    func diskBudget() throws -> Int {
        guard let bytes = Quantity.bytes(diskLimit) else {
            throw ValidationError("--disk-limit: not a size: \(diskLimit)")
        }
        return bytes
    }

    /// The repository's configuration from these options; `failureMemory` (`--tune failure-memory`) is how long a
    /// failure other than 404, 410 or an unresolvable host is remembered.
    func repositoryConfiguration(failureMemory: TimeInterval = 10) throws -> ImageRepository.Configuration {
        var configuration = ImageRepository.Configuration()
        guard let policy = CachePolicy(rawValue: policy) else {
            throw ValidationError("--policy: one of \(CachePolicy.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let lifetime = try OptionValue.duration(expire, "--expire")
        let negative = try OptionValue.duration(negativeTtl, "--negative-ttl")
        configuration.policy = policy
        configuration.expiry = ExpiryPolicy(lifetime: lifetime, honorsCacheControl: cacheControl)
        // One use (lookup, stat, open, reads) sees one attempt even with --negative-ttl 0.
        configuration.failureMemory = FailureMemory(negativeTTL: negative, failureMemory: failureMemory)
        return configuration
    }

    /// `--max-stale` in seconds, or nil when expired images stay until the disk cap evicts them.
    func keepExpired() throws -> TimeInterval? {
        guard let maxStale else { return nil }
        return try OptionValue.duration(maxStale, "--max-stale")
    }
}
