import Foundation

// MARK: - Freshness and revalidation: when a cached copy may be served, and what a 304 renews

extension ImageRepository {
    /// The expiry rule of `url`'s host: its policy-file rule, else `--expire` / `--cache-control`.
    func expiry(for url: ImageURL) -> ExpiryPolicy {
        ActivePolicy.expiry(for: url.host, default: configuration.expiry)
    }

    /// Whether a cached copy of `url` may be served without asking the origin.
    func isFresh(_ source: Source, of url: ImageURL) -> Bool {
        let rule = expiry(for: url)
        return switch source {
        case .memory(let image):
            now() < max(rule.expiry(of: image), image.validatedAt + configuration.minimumFreshness)
        case .disk(let record): now() < rule.expiry(of: record)
        case .download: true
        }
    }

    /// Answers a caller of a revalidation once its head is known: the cached copy on 304 or when the origin cannot be
    /// reached, the new body otherwise, the error when the origin says the image is gone.
    func waitForRevalidation(_ download: Download, fallback: Source, reply: @escaping SourceReply) {
        download.whenHeadKnown { result in
            switch result {
            case .success(let head) where head.isNotModified: reply(.success(fallback))
            case .success: reply(.success(.download(download)))
            case .failure(let error) where error.meansGone: reply(.failure(error))
            case .failure: reply(.success(fallback))
            }
        }
    }

    /// A revalidation answered 304: the cached copy is renewed and the transfer ends at once.
    func notModified(_ download: Download, key: String, fallback: Source, head: ResponseHead) {
        let validatedAt = now()
        // A 304 that says nothing about freshness keeps the lifetime the stored response had (HTTP: a 304 updates
        // only the headers it carries).
        let rule = expiry(for: download.url)
        let saysFreshness = head.cacheControl != nil || head.hasExpires || !rule.honorsCacheControl
        let decision = rule.decide(for: head, now: validatedAt)
        let expiresAt = saysFreshness ? decision.expiresAt : validatedAt + fallback.lifetime
        let fromHeaders = saysFreshness ? decision.fromHeaders : fallback.expiryFromHeaders
        state.withLock { $0.counters.notModified += 1 }
        tiers.renew(key, fallback: fallback, .init(expiresAt: expiresAt, validatedAt: validatedAt,
                                                   expiryFromHeaders: fromHeaders, remoteAddress: head.remoteAddress,
                                                   etag: head.etag))
        logger.info("revalidated: 304 Not Modified, fresh until \(expiresAt)", metadata: ["url": "\(download.url)"])
        endFlight(key, download)
    }
}
