import Foundation
import ImgfsModel
import ImgfsWorkers
import Logging

/// The shared tier: an ``ImageFetching`` in front of the origin fetcher that serves bodies other mounts stored in a
/// shared store (Redis), and makes one origin fetch per URL serve the whole fleet.
///
/// Guarantees:
/// - A request for a URL looks in the store first; a complete body is streamed from it piece by piece, each piece
///   checked (URL, fetch, index, length, CRC-32) and the whole body's checksum verified before the transfer completes.
///   The bytes then go through the same observer (``Download``) as an origin body: image signature and size cap hold.
/// - Otherwise the mount takes the URL's lease (`SET … NX PX`) and fetches from the origin, publishing the body as it
///   arrives; a mount that finds the lease taken streams the pieces the holder publishes. A holder that dies lets its
///   lease lapse (``SharedTierConfiguration/leaseDuration``) and the next mount takes over, continuing after the bytes
///   already delivered (checked against the origin's). Nobody follows a fetch longer than the transfer limit.
/// - The store is never a dependency: any failure or timeout of it sends the transfer to the origin (logged once per
///   outage, counted), and while it is down new transfers go to the origin without asking it.
/// - Every value read is sealed with the fleet key (``SharedTierSeal``) and checked before anything in it is used: a
///   value that is not (forged, or written by a mount with another key) is ignored, counted in `rejected` and logged
///   once per key, and the URL fetched from the origin; no byte of it reaches the caller. A complete body's SHA-256
///   is checked when its last piece arrives.
/// - Credentials stay apart: a URL whose requests carry header lines (`--header`, policy-rule headers) is keyed by
///   the digest of them (``SharedTierKeys``), so only mounts sending the same ones read what it published; one whose
///   requests use a cookie file never uses the store.
/// - Policies come first: a conditional request (revalidation) and a host refused by `--allow-host` or by a policy
///   rule's `deny: true` go straight to the origin fetcher (which refuses the latter); with `--deny-private-networks`
///   the host is resolved first and the store is used only if none of its addresses is private. `no-store` bodies
///   are never shared.
/// - The store is only ever called from the tier's own threads.
public final class SharedTierFetcher: ImageFetching, Sendable {
    let origin: any ImageFetching
    let store: any SharedStoring
    let configuration: SharedTierConfiguration
    let health: SharedTierHealth
    let logger: Logger
    /// The addresses a host resolves to (nil when it cannot be resolved), for `--deny-private-networks`.
    let resolve: @Sendable (String) -> [NetworkAddress]?
    let readers: WorkerPool
    /// Where publications write, one write at a time, in order.
    let publisher: WorkerPool
    /// Where the leases held are renewed, for as long as the process lives.
    private let renewer: WorkerPool
    private let leases = Locked<[String: [UInt8]]>([:])
    /// The keys whose refused values were logged already (cleared when it grows past a bound).
    private let loggedRefusals = Locked<Set<String>>([])
    private let backlog = Locked(0)

    /// A tier in front of `origin` over `store`; `resolve` gives a host's addresses for `--deny-private-networks`.
    /// Its reader, publisher and lease-renewal threads start at once.
    public init(
        origin: any ImageFetching, store: any SharedStoring, configuration: SharedTierConfiguration,
        logger: Logger, resolve: @escaping @Sendable (String) -> [NetworkAddress]? = { _ in nil }
    ) {
        self.origin = origin
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.resolve = resolve
        health = SharedTierHealth(logger: logger)
        readers = WorkerPool(name: "imgfs-shared", threads: configuration.readers)
        publisher = WorkerPool(name: "imgfs-shared-publish")
        renewer = WorkerPool(name: "imgfs-shared-leases")
        renewer.submit { [self] in renewLeases() }
    }

    /// Serves the request from the store, from another mount's fetch under way, or from the origin (then publishing
    /// what it gets); `observer` hears one transfer whichever it was.
    public func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        start(request, observer: observer, originAllowed: true)
    }

    /// A fetcher that reads this tier but never the origin (for `--policy cache-only`): what the store does not have
    /// fails with ``FetchError/notCached``.
    public var storeOnly: any ImageFetching { StoreOnly(tier: self) }

    /// A value of the store was refused: counted (unless the caller counts it), and logged once per key (the URL is
    /// then fetched from the origin).
    func reject(key: String, url: ImageURL, reason: String, counting: Bool = true) {
        if counting { health.count { $0.rejected += 1 } }
        let first = loggedRefusals.withLock { logged -> Bool in
            if logged.count >= 4096 { logged.removeAll() }
            return logged.insert(key).inserted
        }
        if first { logger.warning("shared tier: ignored the stored value for \(url.requestString): \(reason)") }
    }

    /// The counters, for statistics.
    public var counters: SharedTierCounters { health.counters }

    func start(_ request: FetchRequest, observer: any TransferObserving, originAllowed: Bool) -> any TransferHandle {
        // A cookie file's content may differ between machines with the same path: those requests are not shared.
        let unshared = request.rules.profile(for: request.url.host).cookieFile != nil
        if originAllowed
            && (request.isConditional || !health.isUsable || unshared
                || Self.refusal(host: request.url.host, configuration.addressPolicy, request.rules) != nil)
        {
            health.count { $0.bypassed += 1 }
            return origin.start(request, observer: observer)
        }
        let transfer = SharedTierTransfer(observer: observer)
        if unshared {
            transfer.complete(.notCached)
            return transfer
        }
        let session = SharedTierSession(tier: self, request: request, transfer: transfer, originAllowed: originAllowed)
        readers.submit { session.run() }
        return transfer
    }

    /// Why `host` is refused (`--allow-host`, `--deny-private-networks`, a rule of `rules` with `deny: true`), or nil.
    static func refusal(host: String, _ policy: AddressPolicy, _ rules: RequestRules) -> String? {
        policy.refusal(host: host) ?? rules.profile(for: host).refusal
    }

    // MARK: - Leases and backlog

    /// Keeps `key` renewed while this mount's fetch runs.
    func holdLease(_ key: String, fetch: String) {
        leases.withLock { $0[key] = leaseValue(key, fetch: fetch) }
    }

    /// The value of lease `key` held by fetch `fetch`: its id, sealed.
    func leaseValue(_ key: String, fetch: String) -> [UInt8] {
        configuration.seal.seal(Array(fetch.utf8), key: key)
    }

    /// The fetch holding lease `key` according to `value`, or nil (refused, counted and logged) when it is not sealed
    /// with the fleet key or is not a fetch id.
    func leaseHolder(_ value: [UInt8], key: String, url: ImageURL) -> String? {
        guard let id = configuration.seal.open(value, key: key), (1...64).contains(id.count),
            id.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x61...0x7a).contains($0) })
        else {
            reject(key: key, url: url, reason: "a lease that is not sealed with this mount's fleet key")
            return nil
        }
        return String(decoding: id, as: UTF8.self)
    }

    func forgetLease(_ key: String) {
        _ = leases.withLock { $0.removeValue(forKey: key) }
    }

    private func renewLeases() {
        let milliseconds = Int(saturating: configuration.leaseDuration * 1000)
        while true {
            Thread.sleep(forTimeInterval: configuration.leaseDuration / 3)
            for (key, value) in leases.withLock({ $0 }) {
                _ = try? health.run { () throws(SharedStoreError) in
                    try store.renew(key, ifValue: value, milliseconds: milliseconds)
                }
            }
        }
    }

    /// Whether `bytes` more may wait for the store (else the transfer is not shared).
    func reserveBacklog(_ bytes: Int) -> Bool {
        backlog.withLock { total in
            guard total + bytes <= configuration.publishBacklog else { return false }
            total += bytes
            return true
        }
    }

    func releaseBacklog(_ bytes: Int) {
        backlog.withLock { $0 -= bytes }
    }
}

/// ``SharedTierFetcher/storeOnly``.
private struct StoreOnly: ImageFetching {
    let tier: SharedTierFetcher

    func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        tier.start(request, observer: observer, originAllowed: false)
    }
}
