import Foundation
import ImgfsModel

/// Knobs of ``DiskCache`` that only tests change.
struct DiskCacheOptions: Sendable {
    /// Whether files and directories are synced to the device before a write counts as done. Turning it off keeps
    /// the write order and atomic renames but gives up durability across power loss; only tests do.
    var durable = true
    /// How often at most an entry's last use is written to disk (as its data file's modification time).
    var accessPersistInterval: TimeInterval = 60
    /// Bodies of at most this many bytes are stored with their record in one entry file (see ``DiskCacheLayout``);
    /// negative: none.
    var singleFileLimit = 64 << 10
    /// The largest step of a body's checksum or write between two calls of a store's `pace`.
    var paceStep = 1 << 20
    /// When a record stops being fresh (what sweeps compare): by default its stored expiry; the mount passes its
    /// expiry policy, which may compute it from the fetch time and the current `--expire`.
    var expiry: @Sendable (CacheRecord) -> Date = { $0.expiresAt }
    /// The clock used for last-use times.
    var now: @Sendable () -> Date = { Date() }
    /// Called with the final path before each file is written; an errno it returns makes the write fail with that
    /// errno after half of the bytes were written (to simulate a full disk or an I/O error).
    var writeFault: (@Sendable (_ path: String) -> Int32?)?
}
