import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsPipeline

/// The tuning knobs of `imgfs mount`, set with `--tune KEY=VALUE` (docs/PERFORMANCE.md lists them): settings whose
/// defaults were measured or chosen for the common case, and which most mounts never change.
///
/// Guarantees: a value only; ``init(_:)`` accepts exactly the keys of ``keys`` (in any case, `_` for `-`), each with a
/// value in its range, a later item overriding an earlier one; anything else is a `ValidationError` that names the
/// item and the valid keys (or the values the key takes).
struct Tuning: Equatable {
    /// Where large image bodies live in memory: 256 KiB pages of imgfs's own tmpfs, 2 MiB huge pages, or 4 KiB memfds.
    enum Pages: String, CaseIterable {
        case large, huge, small
    }

    var passthrough = true
    var directColdReads = true
    var pages = Pages.large
    var kernelReadAheadKiB = 1024
    var readAhead = 8
    var fetchThreads = FetcherConfiguration.defaultFetchThreads
    var maxTransfers = 16
    var maxTransfersPerHost = 6
    var maxStreamsPerConnection = 100
    var connectTimeout: TimeInterval = 10
    var stallTimeout: TimeInterval = 30
    var timeout: TimeInterval = 120
    var retries = 3
    var failureMemory: TimeInterval = 10
    var maxPixels = 100_000_000
    var thumbWorkers = ProcessInfo.processInfo.activeProcessorCount
    var desktopThumbnails = false
    var thumbCrop = VariantCrop.centre
    var sharedMaxSize = 64 << 20
    var sharedTimeout: TimeInterval = 0.05
    var sharedLease: TimeInterval = 5

    init() {}

    /// The defaults with `items` (`KEY=VALUE`, as given to `--tune`) applied in order.
    init(_ items: [String]) throws {
        let keys = Self.keys
        for item in items {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            let name = Self.normalized(parts.first ?? "")
            guard parts.count == 2 else {
                throw ValidationError("--tune: expected KEY=VALUE, not '\(item)'; \(Self.validKeys)")
            }
            guard let key = keys.first(where: { $0.name == name }) else {
                throw ValidationError("--tune: unknown key '\(parts[0])'; \(Self.validKeys)")
            }
            guard key.apply(&self, parts[1]) else {
                throw ValidationError("--tune \(key.name)=\(parts[1]): expected \(key.expected)")
            }
        }
    }

    /// The sentence that lists the keys, for messages.
    static var validKeys: String { "valid keys: " + keys.map(\.name).joined(separator: ", ") }

    /// `name` as the keys spell it: lower case, words joined by `-` (fstab's `_` accepted).
    static func normalized(_ name: String) -> String {
        name.lowercased().replacingOccurrences(of: "_", with: "-")
    }
}
