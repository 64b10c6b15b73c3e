import Foundation
import ImgfsModel
import ImgfsStore

/// How long a fetched image stays fresh, and whether it may be stored at all.
///
/// By default every image is fresh for `lifetime` (24 h) whatever the origin says, as URLImage and SDWebImage do:
/// predictable, and image servers often send `no-cache` defensively. With `honorsCacheControl`, HTTP decides:
/// `no-store` is not stored on disk (and is stale at once), `no-cache` and `max-age=0` are stored but revalidated on
/// every open, `max-age=N` and `Expires` set the lifetime, and `lifetime` applies when the response says nothing.
///
/// Freshness is computed when an image is used, from the current policy: under the fixed lifetime an image is fresh
/// until its last validation (fetch or 304) + `lifetime`, whatever was stored when it was fetched, so a remount with
/// another `--expire` applies to every cached image; with `honorsCacheControl`, an expiry the response's headers set
/// is kept as stored, and one that fell back to `lifetime` is computed again.
public struct ExpiryPolicy: Sendable {
    /// How long an image is fresh when its headers do not decide (`--expire`).
    public var lifetime: TimeInterval
    /// Whether Cache-Control and Expires decide (`--cache-control`).
    public var honorsCacheControl: Bool

    /// A policy of `lifetime` seconds that honours the headers when `honorsCacheControl`.
    public init(lifetime: TimeInterval = 24 * 3600, honorsCacheControl: Bool = false) {
        self.lifetime = lifetime
        self.honorsCacheControl = honorsCacheControl
    }

    /// What to do with a response received at `now`.
    public struct Decision: Equatable, Sendable {
        /// Whether it may be written to the disk cache.
        public var store: Bool
        /// When the image stops being fresh.
        public var expiresAt: Date
        /// Whether the response's headers set `expiresAt` (with `honorsCacheControl`), rather than `lifetime`.
        public var fromHeaders: Bool

        /// A decision with the given fields.
        public init(store: Bool, expiresAt: Date, fromHeaders: Bool = false) {
            self.store = store
            self.expiresAt = expiresAt
            self.fromHeaders = fromHeaders
        }
    }

    /// When an image stops being fresh: `stored` when the headers set it (`fromHeaders`; nil, from an older record,
    /// counts as true) and HTTP decides, else `validatedAt` + the current `lifetime`.
    public func expiry(stored: Date, validatedAt: Date, fromHeaders: Bool?) -> Date {
        honorsCacheControl && fromHeaders != false ? stored : validatedAt + lifetime
    }

    /// ``expiry(stored:validatedAt:fromHeaders:)`` of a disk record.
    public func expiry(of record: CacheRecord) -> Date {
        expiry(stored: record.expiresAt, validatedAt: record.lastValidated, fromHeaders: record.expiryFromHeaders)
    }

    /// ``expiry(of:)-(CacheRecord)`` as the disk cache takes it.
    public var diskExpiry: @Sendable (CacheRecord) -> Date {
        { [self] record in expiry(of: record) }
    }

    /// ``expiry(stored:validatedAt:fromHeaders:)`` of an image in memory.
    public func expiry(of image: CachedImage) -> Date {
        expiry(stored: image.expiresAt, validatedAt: image.validatedAt, fromHeaders: image.expiryFromHeaders)
    }

    /// Whether a response with `head`, received at `now`, may be stored on disk and until when it is fresh.
    public func decide(for head: ResponseHead, now: Date) -> Decision {
        guard honorsCacheControl else { return Decision(store: true, expiresAt: now + lifetime) }
        let directives = Self.directives(head.cacheControl)
        if directives["no-store"] != nil { return Decision(store: false, expiresAt: now, fromHeaders: true) }
        if directives["no-cache"] != nil { return Decision(store: true, expiresAt: now, fromHeaders: true) }
        if let maxAge = directives["max-age"].flatMap({ $0 }).flatMap(DeltaSeconds.parse) {
            return Decision(store: true, expiresAt: now + TimeInterval(maxAge), fromHeaders: true)
        }
        if head.hasExpires {
            guard let expires = head.expires else { return Decision(store: true, expiresAt: now, fromHeaders: true) }
            return Decision(
                store: true, expiresAt: now + max(0, expires.timeIntervalSince(head.date ?? now)),
                fromHeaders: true)
        }
        return Decision(store: true, expiresAt: now + lifetime)
    }

    /// `no-cache, max-age=60` → ["no-cache": nil, "max-age": "60"] (names lower-cased, quotes removed).
    static func directives(_ header: String?) -> [String: String?] {
        var result: [String: String?] = [:]
        for part in (header ?? "").split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pieces.first?.lowercased(), !name.isEmpty else { continue }
            result[name] = pieces.count > 1 ? pieces[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
        }
        return result
    }
}
