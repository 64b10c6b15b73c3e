import Foundation
import ImgfsModel

/// When a cached copy may be served without asking the origin, and what a 304 renews: the expiry rules of a mount
/// (`--expire`, `--cache-control`, a policy file's per-host rules) applied at use.
///
/// Guarantees: a copy is fresh until its expiry under its host's rule (in the request rules the caller gives: those of
/// the request or of the moment), computed at use from when it was last
/// validated (so a remount with another `--expire` applies to copies cached earlier); a copy the origin vouched for
/// less than `minimumFreshness` ago is fresh whatever its expiry; a 304 that says nothing about freshness keeps the
/// lifetime the stored response had (HTTP: a 304 updates only the headers it carries).
struct Freshness: Sendable {
    let expiry: ExpiryPolicy
    let minimumFreshness: TimeInterval

    /// The expiry rule of `url`'s host: its policy-file rule, else `--expire` / `--cache-control`.
    func rule(for url: ImageURL, under rules: RequestRules) -> ExpiryPolicy {
        rules.expiry(for: url.host, default: expiry)
    }

    /// When the cached copy `source` of `url` expires (nil for a transfer).
    func expiry(of source: ImageSource, url: ImageURL, under rules: RequestRules) -> Date? {
        switch source {
        case .memory(let image): rule(for: url, under: rules).expiry(of: image)
        case .disk(let record): rule(for: url, under: rules).expiry(of: record)
        case .download: nil
        }
    }

    /// Whether the cached copy `source` of `url` may be served at `now` without asking the origin.
    func isFresh(_ source: ImageSource, of url: ImageURL, under rules: RequestRules, now: Date) -> Bool {
        guard let expiresAt = expiry(of: source, url: url, under: rules) else { return true }
        if case .memory(let image) = source { return now < max(expiresAt, image.validatedAt + minimumFreshness) }
        return now < expiresAt
    }

    /// What a 304 `head` for `url`, arriving at `validatedAt`, renews of the cached copy `fallback`.
    func renewal(
        of fallback: ImageSource, url: ImageURL, under rules: RequestRules, by head: ResponseHead,
        validatedAt: Date
    ) -> CacheTiers.Renewal {
        let rule = rule(for: url, under: rules)
        let saysFreshness = head.cacheControl != nil || head.hasExpires || !rule.honorsCacheControl
        let decision = rule.decide(for: head, now: validatedAt)
        return CacheTiers.Renewal(
            expiresAt: saysFreshness ? decision.expiresAt : validatedAt + fallback.lifetime,
            validatedAt: validatedAt,
            expiryFromHeaders: saysFreshness ? decision.fromHeaders : fallback.expiryFromHeaders,
            remoteAddress: head.remoteAddress, etag: head.etag)
    }
}
