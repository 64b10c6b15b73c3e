import Foundation
import ImgfsModel

/// One transfer through the shared tier, run on a reader thread: a complete body from the store, else the lease and
/// the origin, else the pieces another mount publishes; the origin whenever the store fails.
struct SharedTierSession: Sendable {
    let tier: SharedTierFetcher
    let request: FetchRequest
    let transfer: SharedTierTransfer
    let originAllowed: Bool

    private var keys: SharedTierKeys { SharedTierKeys(url: request.url, seal: configuration.seal) }
    private var configuration: SharedTierConfiguration { tier.configuration }

    /// How following a fetch ended.
    private enum Outcome {
        /// The transfer completed (or was cancelled).
        case done
        /// The fetch stopped without completing its body (its mount died or gave up).
        case abandoned
        /// A value was missing or did not check out.
        case corrupt
        /// The store could not be used, or the wait reached the transfer limit.
        case unusable
    }

    func run() {
        if let refusal = SharedTierFetcher.refusal(host: request.url.host, configuration.addressPolicy, request.rules) {
            return transfer.complete(.refused(refusal))
        }
        if configuration.addressPolicy.denyPrivateNetworks, !resolvesToPublicAddresses() {
            tier.health.count { $0.bypassed += 1 }
            return toOrigin(lease: nil)
        }
        var following: String?
        /// A complete record whose pieces did not check out: ignored from then on (the origin's body replaces it).
        var corrupt: String?
        let deadline = Date() + configuration.waitLimit
        for _ in 0..<4 {
            guard !transfer.isFinished else { return }
            do throws(SharedStoreError) {
                if let record = try completeRecord(ignoring: corrupt),
                    transfer.delivered == 0 || record.fetch == following
                {
                    following = record.fetch
                    switch try follow(record.fetch, complete: record, deadline: deadline) {
                    case .done: return tier.health.count { $0.hits += 1 }
                    case .corrupt:
                        corrupt = record.fetch
                        tier.health.count { $0.rejected += 1 }
                    case .abandoned, .unusable: return toOrigin(lease: nil)
                    }
                }
                guard originAllowed else {
                    guard let value = try storeGet(keys.lease), following == nil,
                        let holder = tier.leaseHolder(value, key: keys.lease, url: request.url)
                    else { return transfer.complete(.notCached) }
                    if try follow(holder, complete: nil, deadline: deadline) != .done { transfer.complete(.notCached) }
                    return
                }
                let fetch = Self.newFetchID()
                if try tier.health.runWrite({ () throws(SharedStoreError) in
                    try tier.store.setIfAbsent(
                        keys.lease, tier.leaseValue(keys.lease, fetch: fetch),
                        milliseconds: Int(saturating: configuration.leaseDuration * 1000))
                }) {
                    // The holder before may have completed the body and released the lease between the look-up
                    // above and this lease: look again, so that the fleet fetches it once.
                    guard try completeRecord(ignoring: corrupt) == nil else {
                        try storeRun { () throws(SharedStoreError) in
                            try tier.store.delete(keys.lease, ifValue: tier.leaseValue(keys.lease, fetch: fetch))
                        }
                        continue
                    }
                    return toOrigin(lease: fetch)
                }
                guard let value = try storeGet(keys.lease) else { continue }
                // A lease the fleet key did not seal names no fetch worth following: the origin, at once.
                guard let holder = tier.leaseHolder(value, key: keys.lease, url: request.url) else {
                    return toOrigin(lease: nil)
                }
                guard transfer.delivered == 0 || holder == following else { return toOrigin(lease: nil) }
                following = holder
                tier.health.count { $0.followed += 1 }
                switch try follow(holder, complete: nil, deadline: deadline) {
                case .done: return
                case .abandoned: continue
                case .corrupt: tier.health.count { $0.rejected += 1 }
                case .unusable: return toOrigin(lease: nil)
                }
            } catch {
                return originAllowed ? toOrigin(lease: nil) : transfer.complete(.notCached)
            }
        }
        originAllowed ? toOrigin(lease: nil) : transfer.complete(.notCached)
    }

    // MARK: - Reading the store

    /// The URL's complete, fresh, valid record, or nil (a foreign or corrupt one is counted and ignored).
    private func completeRecord(ignoring corrupt: String? = nil) throws(SharedStoreError) -> SharedTierRecord? {
        guard let value = try storeGet(keys.meta) else { return nil }
        guard let record = accept(value, key: keys.meta), record.size != nil, record.checksum != nil else {
            return nil
        }
        return record.expiresAt > Date() && record.fetch != corrupt ? record : nil
    }

    /// Streams the pieces of fetch `fetch` after those already delivered, until the body is complete and checked.
    private func follow(
        _ fetch: String, complete: SharedTierRecord?,
        deadline: Date
    ) throws(SharedStoreError) -> Outcome {
        var record = complete
        var pause = configuration.pollMinimum
        while !transfer.isFinished {
            guard Date() < deadline else { return .unusable }
            if transfer.head == nil {
                var head = record
                if head == nil { head = try headRecord(fetch) }
                if let head {
                    guard transfer.deliver(head: head.responseHead(now: Date())) else { return .done }
                    continue
                }
            }
            if transfer.head != nil {
                if let record, let size = record.size, transfer.delivered >= size {
                    guard transfer.delivered == size, transfer.prefixChecksum == record.checksum,
                        transfer.prefixSHA256 == record.sha256
                    else {
                        tier.reject(
                            key: keys.meta, url: request.url, reason: "the pieces do not make the recorded body",
                            counting: false)
                        try forget(record)
                        return .corrupt
                    }
                    transfer.complete(nil)
                    return .done
                }
                // After a short piece only the record can follow (it was the last one).
                let delivered = transfer.delivered
                let index = delivered / configuration.pieceSize
                let key = keys.piece(fetch, index)
                if delivered % configuration.pieceSize == 0, let value = try storeGet(key) {
                    let expected = record?.size.map { min(configuration.pieceSize, $0 - delivered) }
                    guard let payload = configuration.seal.open(value, key: key) else {
                        tier.reject(
                            key: key, url: request.url, reason: "a piece not sealed with the fleet key", counting: false
                        )
                        return .corrupt
                    }
                    guard let bytes = SharedTierPiece.decode(payload, index: index), !bytes.isEmpty,
                        expected == nil || bytes.count == expected
                    else { return .corrupt }
                    guard bytes.withUnsafeBytes({ transfer.deliver(bytes: $0, fromStore: true) }) else { return .done }
                    pause = configuration.pollMinimum
                    continue
                }
            }
            if record != nil { return .corrupt }
            if let meta = try completeRecord(), meta.fetch == fetch {
                record = meta
                continue
            }
            guard try storeGet(keys.lease) == tier.leaseValue(keys.lease, fetch: fetch) else {
                // The holder finished (its record may have been written just now) or let go.
                if let meta = try completeRecord(), meta.fetch == fetch {
                    record = meta
                    continue
                }
                return .abandoned
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, configuration.pollMaximum)
        }
        return .done
    }

    /// Deletes the URL's complete record if it is still `record` (its pieces do not make its body): the next reader
    /// fetches from the origin instead of meeting it again.
    private func forget(_ record: SharedTierRecord) throws(SharedStoreError) {
        guard let value = try storeGet(keys.meta),
            let payload = configuration.seal.open(value, key: keys.meta),
            SharedTierRecord.decode(Array(payload), url: request.url.resourceKey, maxSize: configuration.maxSize)
                == record
        else { return }
        try storeRun { () throws(SharedStoreError) in try tier.store.delete(keys.meta, ifValue: value) }
    }

    private func headRecord(_ fetch: String) throws(SharedStoreError) -> SharedTierRecord? {
        guard let value = try storeGet(keys.head(fetch)) else { return nil }
        guard let record = accept(value, key: keys.head(fetch)), record.fetch == fetch,
            record.pieceSize == configuration.pieceSize
        else { return nil }
        return record
    }

    /// The record in `value`, or nil with the refusal counted and logged (once per key): not sealed with the fleet
    /// key for `key`, or refused by ``SharedTierRecord/check(_:url:maxSize:)``.
    private func accept(_ value: [UInt8], key: String) -> SharedTierRecord? {
        guard let payload = configuration.seal.open(value, key: key) else {
            tier.reject(key: key, url: request.url, reason: "not sealed with this mount's fleet key")
            return nil
        }
        switch SharedTierRecord.check(Array(payload), url: request.url.resourceKey, maxSize: configuration.maxSize) {
        case .success(let record): return record
        case .failure(let refusal):
            tier.reject(key: key, url: request.url, reason: refusal.reason)
            return nil
        }
    }

    private func storeGet(_ key: String) throws(SharedStoreError) -> [UInt8]? {
        try storeRun { () throws(SharedStoreError) in try tier.store.get(key) }
    }

    private func storeRun<Result>(
        _ operation: () throws(SharedStoreError) -> Result
    ) throws(SharedStoreError) -> Result {
        try tier.health.run(operation)
    }

    // MARK: - The origin

    /// Fetches from the origin; with a lease, publishes the body for the other mounts.
    private func toOrigin(lease fetch: String?) {
        guard !transfer.isFinished else { return }
        guard originAllowed else { return transfer.complete(.notCached) }
        var publication: SharedTierPublication?
        if let fetch {
            tier.holdLease(keys.lease, fetch: fetch)
            tier.health.count { $0.leases += 1 }
            publication = SharedTierPublication(fetch: fetch, url: request.url, tier: tier)
        } else {
            tier.health.count { $0.bypassed += 1 }
        }
        let tee = SharedTierTee(transfer: transfer, publication: publication)
        transfer.attach(tier.origin.start(request, observer: tee))
    }

    /// Whether every address the URL's host resolves to is public (for `--deny-private-networks`).
    private func resolvesToPublicAddresses() -> Bool {
        guard let addresses = tier.resolve(request.url.host), !addresses.isEmpty else { return false }
        return addresses.allSatisfy { configuration.addressPolicy.allows(address: $0) }
    }

    private static func newFetchID() -> String {
        (0..<2).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 16) }.joined(separator: "-")
    }
}
