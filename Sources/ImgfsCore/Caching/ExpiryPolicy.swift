import Foundation

/// How long a fetched image stays fresh, and whether it may be stored at all.
///
/// By default every image is fresh for `lifetime` (24 h) whatever the origin says, as URLImage and SDWebImage do:
/// predictable, and image servers often send `no-cache` defensively. With `honorsCacheControl`, HTTP decides:
/// `no-store` is not stored on disk (and is stale at once), `no-cache` and `max-age=0` are stored but revalidated on
/// every open, `max-age=N` and `Expires` set the lifetime, and `lifetime` applies when the response says nothing.
public struct ExpiryPolicy: Sendable {
    public var lifetime: TimeInterval
    public var honorsCacheControl: Bool

    public init(lifetime: TimeInterval = 24 * 3600, honorsCacheControl: Bool = false) {
        self.lifetime = lifetime
        self.honorsCacheControl = honorsCacheControl
    }

    /// What to do with a response received at `now`.
    public struct Decision: Equatable, Sendable {
        /// Whether it may be written to the disk cache.
        public var store: Bool
        public var expiresAt: Date

        public init(store: Bool, expiresAt: Date) {
            self.store = store
            self.expiresAt = expiresAt
        }
    }

    public func decide(for head: ResponseHead, now: Date) -> Decision {
        guard honorsCacheControl else { return Decision(store: true, expiresAt: now + lifetime) }
        let directives = Self.directives(head.cacheControl)
        if directives["no-store"] != nil { return Decision(store: false, expiresAt: now) }
        if directives["no-cache"] != nil { return Decision(store: true, expiresAt: now) }
        if let maxAge = directives["max-age"].flatMap({ $0 }).flatMap(Double.init) {
            return Decision(store: true, expiresAt: now + max(0, maxAge))
        }
        if head.hasExpires {
            guard let expires = head.expires else { return Decision(store: true, expiresAt: now) }
            return Decision(store: true, expiresAt: now + max(0, expires.timeIntervalSince(head.date ?? now)))
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
