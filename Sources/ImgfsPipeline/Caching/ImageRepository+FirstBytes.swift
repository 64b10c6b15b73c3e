import Foundation
import ImgfsModel

// MARK: - What an image's first bytes say, without fetching

extension ImageRepository {
    /// What is known of `url` now, without fetching anything: its metadata and up to `count` of its first bytes
    /// (all of them for a shorter image), from a tier, a completed transfer or a probe that ended after its first
    /// bytes; nil when none holds the image.
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
            guard let download = state.withLock({ $0.inFlight[key]?.download }), let metadata = download.currentMetadata
            else { return nil }
            if let bytes = download.completeBytes {
                return (metadata, bytes.copyBytes(offset: 0, count: min(count, metadata.size)))
            }
            // A probe that ended after its first bytes keeps them until an open wants the rest.
            return download.probedFirstBytes(count: min(count, metadata.size)).map { (metadata, $0) }
        }
    }

    /// Answers with up to `count` first bytes of `url` once the transfer under way now (a probe's included) has them,
    /// or nil when none runs or it fails first: starts no request and keeps no transfer wanted (it only watches), and
    /// the bytes are not a reader's (a new version may still replace them).
    public func arrivingFirstBytes(
        of url: ImageURL, count: Int = ImageHeader.bytesNeeded, reply: @escaping @Sendable ([UInt8]?) -> Void
    ) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }) else { return reply(nil) }
        let watching = Interest()
        watching.withdraw()
        download.whenMetadataKnown(interest: watching) { metadata in
            guard case .success(let metadata) = metadata else { return reply(nil) }
            download.read(offset: 0, count: min(count, metadata.size), interest: watching, servesReader: false) {
                reply(try? $0.get().withSegments { $0.flatMap { Array($0) } })
            }
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
