import Foundation
import ImgfsModel
import ImgfsStore

/// What a mount that holds a URL's lease writes to the store while its origin transfer runs: the head, the body in
/// pieces as they fill, then the complete record (`meta`), then the lease is released.
///
/// Guarantees: every value is sealed with the fleet key (``SharedTierSeal``) for the key it is written to; the complete
/// record carries the body's SHA-256; the writes happen on the tier's publishing thread, in order, never on the
/// fetching thread; the record that makes the body a hit is written only after every piece is; a body that may not be
/// shared (`no-store`, not a 200, fresh for less than a second, larger than `maxSize`, not starting like an image when
/// images are required, or a store that fails or falls behind) is abandoned: the lease is released and no record
/// written, so other mounts fetch it themselves. No piece is written before the body's first bytes passed the image
/// check.
final class SharedTierPublication: Sendable {
    private struct State {
        var sharing = true
        var record: SharedTierRecord?
        var buffer: [UInt8] = []
        var index = 0
        var size = 0
        var checksum: UInt32 = 0
        var digest = SHA256()
        /// The first bytes, for the image check, and whether they passed it.
        var prefix: [UInt8] = []
        var verified = false
    }

    let fetch: String
    private let url: ImageURL
    private let keys: SharedTierKeys
    private let tier: SharedTierFetcher
    private let state = Locked(State())
    /// Set by the publishing thread when a write failed: later writes of this body are skipped.
    private let broken = Locked(false)

    init(fetch: String, url: ImageURL, tier: SharedTierFetcher) {
        self.fetch = fetch
        self.url = url
        keys = SharedTierKeys(url: url, seal: tier.configuration.seal)
        self.tier = tier
    }

    private var configuration: SharedTierConfiguration { tier.configuration }

    /// The origin's head arrived: decides whether the body is shared.
    func begin(head: ResponseHead) {
        let now = Date()
        let decision = configuration.expiry.decide(for: head, now: now)
        guard head.status == 200, decision.store, decision.expiresAt.timeIntervalSince(now) >= 1,
            (head.contentLength ?? 0) <= configuration.maxSize
        else { return abandon() }
        let record = SharedTierRecord(
            url: url.resourceKey, fetch: fetch, head: head, expiresAt: decision.expiresAt,
            pieceSize: configuration.pieceSize)
        state.withLock { $0.record = record }
        write(keys.head(fetch), record.encoded(), until: record.expiresAt)
    }

    /// More body bytes (on the fetching thread: only copied here).
    func append(_ bytes: UnsafeRawBufferPointer) {
        let (pieces, drop) = state.withLock { state -> ([(Int, [UInt8])], Bool) in
            guard state.sharing, state.record != nil else { return ([], false) }
            state.size += bytes.count
            guard state.size <= configuration.maxSize else { return ([], true) }
            state.checksum = CRC32.update(state.checksum, with: bytes)
            state.digest.update(bytes)
            if state.prefix.count < ImageSignature.bytesNeeded {
                state.prefix += bytes.prefix(ImageSignature.bytesNeeded - state.prefix.count)
            }
            state.buffer.append(contentsOf: bytes)
            // Nothing is published before the body's first bytes are known to be an image.
            if !state.verified {
                guard state.prefix.count >= ImageSignature.bytesNeeded || !configuration.requireImage else {
                    return ([], false)
                }
                guard !configuration.requireImage || ImageSignature.detect(state.prefix) != nil else {
                    return ([], true)
                }
                state.verified = true
            }
            return (Self.takePieces(&state, size: configuration.pieceSize, all: false), false)
        }
        if drop { return abandon() }
        for (index, piece) in pieces { writePiece(index, piece) }
    }

    /// The origin transfer ended: a whole body is recorded as complete, anything else abandoned.
    func finish(error: FetchError?) {
        guard error == nil else { return abandon() }
        let (pieces, record) = state.withLock { state -> ([(Int, [UInt8])], SharedTierRecord?) in
            guard state.sharing, var record = state.record else { return ([], nil) }
            // The mount's download checks a body shorter than the signature window only after this call: check it
            // here, so that nothing it will refuse is published.
            guard !configuration.requireImage || ImageSignature.detect(state.prefix) != nil else { return ([], nil) }
            state.sharing = false
            record.size = state.size
            record.checksum = state.checksum
            record.sha256 = SharedTierTransfer.hex(state.digest.finish())
            return (Self.takePieces(&state, size: configuration.pieceSize, all: true), record)
        }
        guard let record else { return abandon() }
        for (index, piece) in pieces { writePiece(index, piece) }
        tier.publisher.submit { [self] in
            guard !broken.withLock({ $0 }) else { return release() }
            let milliseconds = Int(saturating: record.expiresAt.timeIntervalSinceNow * 1000)
            do throws(SharedStoreError) {
                try tier.health.runWrite { () throws(SharedStoreError) in
                    try tier.store.set(
                        keys.meta, configuration.seal.seal(record.encoded(), key: keys.meta),
                        milliseconds: max(1, milliseconds))
                }
                tier.health.count { $0.published += 1 }
            } catch {}
            release()
        }
    }

    /// Stops sharing this body and releases the lease.
    func abandon() {
        let first = state.withLock { state -> Bool in
            defer { state.sharing = false; state.buffer = [] }
            return state.sharing
        }
        if first { tier.publisher.submit { [self] in release() } }
    }

    private static func takePieces(_ state: inout State, size: Int, all: Bool) -> [(Int, [UInt8])] {
        var pieces: [(Int, [UInt8])] = []
        while state.buffer.count >= size || (all && !state.buffer.isEmpty) {
            let count = min(size, state.buffer.count)
            pieces.append((state.index, Array(state.buffer[..<count])))
            state.buffer.removeFirst(count)
            state.index += 1
        }
        return pieces
    }

    private func writePiece(_ index: Int, _ bytes: [UInt8]) {
        guard tier.reserveBacklog(bytes.count) else { return abandon() }
        let expiresAt = state.withLock { $0.record?.expiresAt } ?? Date()
        let value = SharedTierPiece.encode(index: index, bytes: bytes)
        write(keys.piece(fetch, index), value, until: expiresAt + 60) { [tier] in tier.releaseBacklog(bytes.count) }
    }

    /// Queues one write; a failure marks the publication broken (the lease is then released at the end).
    private func write(_ key: String, _ value: [UInt8], until: Date, then: (@Sendable () -> Void)? = nil) {
        tier.publisher.submit { [self] in
            defer { then?() }
            guard !broken.withLock({ $0 }) else { return }
            let milliseconds = max(1000, Int(saturating: until.timeIntervalSinceNow * 1000))
            do throws(SharedStoreError) {
                try tier.health.runWrite { () throws(SharedStoreError) in
                    try tier.store.set(key, configuration.seal.seal(value, key: key), milliseconds: milliseconds)
                }
            } catch {
                broken.withLock { $0 = true }
            }
        }
    }

    /// On the publishing thread: gives the lease back (if it is still ours).
    private func release() {
        tier.forgetLease(keys.lease)
        try? tier.health.run { () throws(SharedStoreError) in
            try tier.store.delete(keys.lease, ifValue: tier.leaseValue(keys.lease, fetch: fetch))
        }
    }
}
