import Foundation
import ImgfsModel

/// How the shared tier behaves (`--shared-*` options and the limits it shares with the origin fetcher).
public struct SharedTierConfiguration: Sendable {
    /// Bytes per stored piece: a reader streams pieces as they appear, and the store never holds one huge value.
    public var pieceSize = 1 << 20
    /// Bodies larger than this are not shared (`--tune shared-max-size`).
    public var maxSize = 64 << 20
    /// How long a lease lasts without renewal: a mount that dies mid-fetch holds the URL at most this long.
    public var leaseDuration: TimeInterval = 5
    /// How long a mount follows another mount's fetch at most (the transfer limit, `--tune timeout`).
    public var waitLimit: TimeInterval = 120
    /// How often a follower looks for new pieces: from `pollMinimum`, doubling while nothing new appears, up to
    /// `pollMaximum`.
    public var pollMinimum: TimeInterval = 0.002
    /// The longest wait between two polls; see `pollMinimum`.
    public var pollMaximum: TimeInterval = 0.05
    /// The freshness rules of the mount: decide what is shared (never `no-store`) and the TTL in the store.
    public var expiry = ExpiryPolicy()
    /// `--allow-host` and `--deny-private-networks`, applied before the store is asked.
    public var addressPolicy = AddressPolicy()
    /// Bytes waiting to be written to the store at most; a transfer that would exceed it is not shared.
    public var publishBacklog = 64 << 20
    /// Whether bodies must start like an image (off with `--allow-any-type`): a body too short for the fetching
    /// mount's own check to have run before its end is checked here before it is published.
    public var requireImage = true
    /// The fleet key (`--shared-cache-key-file`) every value is sealed with and checked against.
    public var seal = SharedTierSeal()
    /// Threads that read the store and follow other mounts' fetches.
    public var readers = 16

    /// The defaults above; the daemon sets each from its options.
    public init() {}
}
