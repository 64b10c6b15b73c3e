import Foundation
import ImgfsModel

// MARK: - What an image's first bytes say, without fetching

extension ImageRepository {
    /// What is known of `url` now, without fetching anything: its metadata and up to `count` of its first bytes
    /// (all of them for a shorter image), from a tier or a completed transfer; nil when neither holds the image.
    /// A disk entry's bytes are read from its file (a small read; its body does not move into memory).
    public func firstBytes(
        of url: ImageURL, count: Int = ImageHeader.bytesNeeded
    ) -> (
        metadata: ImageMetadata, bytes: [UInt8]
    )? {
        let key = url.cacheKey
        switch tiers.lookup(key) {
        case .memory(let image)?:
            return (image.metadata, image.bytes.copyBytes(offset: 0, count: min(count, image.metadata.size)))
        case .disk(let record)?:
            guard let bytes = try? tiers.disk?.read(key: key, offset: 0, count: min(count, record.size)) else {
                return nil
            }
            return (record.metadata, bytes)
        case nil:
            guard let download = state.withLock({ $0.inFlight[key]?.download }),
                let metadata = download.currentMetadata, let bytes = download.completeBytes
            else { return nil }
            return (metadata, bytes.copyBytes(offset: 0, count: min(count, metadata.size)))
        }
    }

    /// Whether the repository holds `url` or is fetching it, or remembers its failure: when none of these, what a list
    /// knows of it is all there is without the network.
    public func isKnown(_ url: ImageURL) -> Bool {
        let key = url.cacheKey
        if state.withLock({ $0.inFlight[key] != nil || $0.failures.lastError(key) != nil }) { return true }
        return tiers.holds(key)
    }

    /// Calls `then` once the transfer of `url` under way now has ended (at once when none is): neither waits for it
    /// nor keeps it wanted.
    public func whenSettled(_ url: ImageURL, then: @escaping @Sendable () -> Void) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }) else { return then() }
        download.whenFinished { _ in then() }
    }
}
