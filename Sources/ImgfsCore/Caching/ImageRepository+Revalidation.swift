import Foundation

// MARK: - Freshness and revalidation: when a cached copy may be served, and what a 304 renews

extension ImageRepository {
    /// Whether a cached copy may be served without asking the origin.
    func isFresh(_ source: Source) -> Bool {
        switch source {
        case .memory(let image): now() < max(image.expiresAt, image.validatedAt + configuration.minimumFreshness)
        case .disk(let record): now() < record.expiresAt
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
        let rule = ActivePolicy.expiry(for: download.url.host, default: configuration.expiry)
        let saysFreshness = head.cacheControl != nil || head.hasExpires || !rule.honorsCacheControl
        let expiresAt = saysFreshness ? rule.decide(for: head, now: validatedAt).expiresAt
            : validatedAt + fallback.lifetime
        state.withLock { $0.counters.notModified += 1 }
        tiers.renew(key, fallback: fallback, expiresAt: expiresAt, validatedAt: validatedAt, etag: head.etag)
        logger.info("revalidated: 304 Not Modified, fresh until \(expiresAt)", metadata: ["url": "\(download.url)"])
        endFlight(key, download)
    }
}
