import ImgfsModel

/// What the variant store did since the mount started, for `.imgfs/stats.json` (`variants`) and `.imgfs/metrics`.
///
/// Guarantees: counters only grow; `made` counts variants completely encoded and filed, `failures` the productions
/// that ended in an error (one per production, however many readers waited for it), by ``VariantError/reason``.
public struct VariantCounters: Codable, Equatable, Sendable {
    /// Variants made (decoded, encoded and cached).
    public var made = 0
    /// Reads of variants answered from the variants' memory cache.
    public var servedFromMemory = 0
    /// Reads of variants answered from the variants' disk cache (the variant is then moved to memory).
    public var servedFromDisk = 0
    /// Productions that failed, by reason: `original`, `too_many_pixels`, `decode_memory`, `undecodable`,
    /// `not_raster`.
    public var failures: [String: Int] = [:]
    /// Time the workers spent decoding and encoding, successful or not, in milliseconds.
    public var decodeMilliseconds = 0
    /// Variant entries removed from the disk cache by the sweep or `purge --expired` (expired) or to stay within
    /// its size limit.
    public var diskEvictions = 0

    /// All counters at zero.
    public init() {}
}

extension VariantError {
    /// A short name for counters and metric labels.
    public var reason: String {
        switch self {
        case .original: "original"
        case .tooManyPixels: "too_many_pixels"
        case .decodeTooLarge: "decode_memory"
        case .undecodable: "undecodable"
        case .notRaster: "not_raster"
        }
    }
}

extension VariantCounters {
    /// Writes the counters as Prometheus metrics through `metric(name, type, help, samples)`.
    package static func metrics(
        _ counters: VariantCounters,
        into metric: (String, String, String, [(labels: String, value: Int)]) -> Void
    ) {
        metric("variants_made_total", "counter", "Variants (thumbnails) made.", [("", counters.made)])
        metric(
            "variants_served_total", "counter", "Reads of variants by cache tier.",
            [("{tier=\"memory\"}", counters.servedFromMemory), ("{tier=\"disk\"}", counters.servedFromDisk)])
        metric(
            "variants_failures_total", "counter", "Variant productions that failed, by reason.",
            ["original", "too_many_pixels", "decode_memory", "undecodable", "not_raster"].map {
                ("{reason=\"\($0)\"}", counters.failures[$0] ?? 0)
            })
        metric(
            "variants_decode_milliseconds_total", "counter", "Time spent decoding and encoding variants.",
            [("", counters.decodeMilliseconds)])
        metric(
            "variants_disk_evictions_total", "counter",
            "Variants removed from the disk cache (expired or over its limit).",
            [("", counters.diskEvictions)])
    }
}
