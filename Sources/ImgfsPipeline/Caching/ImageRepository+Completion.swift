import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - What happens when a transfer ends or answers a revalidation, and reading from disk

extension ImageRepository {
    /// Files the outcome of a transfer into the caches; the transfer stays joinable until that is done.
    func finished(_ download: Download, key: String, fallback: ImageSource?, error: FetchError?) {
        let url = download.url
        if error == .cancelled {
            // Normal operation (readers gone, a viewer jumped away from read-ahead): neither a failure nor a warning.
            state.withLock { $0.counters.cancelled += 1 }
            logger.debug("transfer called off: nobody wants it any more", metadata: ["url": "\(url)"])
            endFlight(key, download)
            return
        }
        if let error {
            state.withLock { $0.recordFailure(key, error, at: now()) }
            logger.warning("fetch failed: \(error)", metadata: ["url": "\(url)"])
            if case .changed = error {
                // The kernel may hold the size of the version that is gone: the next use starts over. Not on the fetch
                // thread: the kernel's invalidation waits for pages that reads failed just now may still hold locked.
                DispatchQueue.global().async { [contentChanges] in contentChanges.announce(url) }
            }
            if fallback != nil {
                if error.meansGone {
                    tiers.remove(key)
                    logger.notice(
                        "the origin says the image is gone (\(error)); dropped the cached copy",
                        metadata: ["url": "\(url)"])
                    // The kernel must not keep the old attributes: the name no longer exists.
                    contentChanges.announce(url)
                } else {
                    state.withLock { $0.counters.staleServed += 1 }
                    logger.warning(
                        "origin unreachable (\(error)); serving the expired cached copy (stale-if-error)",
                        metadata: ["url": "\(url)"])
                }
            }
            endFlight(key, download)
            return
        }
        state.withLock { $0.failures.clearLastError(key) }
        guard let head = download.head, !head.isNotModified else { return endFlight(key, download) }
        // The repository's clock dates the copy: freshness is computed from it at every use.
        let decidedAt = now()
        let decision = freshness.rule(for: url, under: download.rules).decide(for: head, now: decidedAt)
        guard let bytes = download.completeBytes, var metadata = download.currentMetadata else {
            return endFlight(key, download)
        }
        let fetchedAt = keptFetchTime(key, metadata, bytes)
        if fetchedAt != metadata.fetchedAt {
            // The transfer reported a fetch time the body turned out not to deserve, or the reverse: the kernel drops
            // the attributes it took from the transfer.
            metadata.fetchedAt = fetchedAt
            contentChanges.announce(url)
        }
        let image = CachedImage(
            url: url, bytes: bytes, metadata: metadata, expiresAt: decision.expiresAt,
            validatedAt: decidedAt, expiryFromHeaders: decision.fromHeaders,
            remoteAddress: head.remoteAddress)
        let inMemory = memory.insert(image, forKey: key)
        // Once the memory cache has it, later callers find it there (and see its expiry); otherwise the transfer stays
        // joinable until the disk has it.
        if inMemory { endFlight(key, download) }
        guard decision.store, disk != nil else {
            disk?.remove(key: key)
            return endFlight(key, download)
        }
        let record = CacheRecord(
            key: key, url: url.string, size: metadata.size, contentType: metadata.contentType,
            etag: metadata.etag, lastModified: metadata.lastModified, fetchedAt: metadata.fetchedAt,
            expiresAt: decision.expiresAt, checksum: 0, lastAccess: decidedAt,
            validatedAt: decidedAt, expiryFromHeaders: decision.fromHeaders,
            remoteAddress: head.remoteAddress)
        guard tiers.queueWrite(image, as: record, then: { [self] in endFlight(key, download) }) else {
            state.withLock { $0.counters.diskWritesSkipped += 1 }
            return endFlight(key, download)
        }
    }

    /// Serves a read from a disk entry (``CacheTiers/readFromDisk(_:of:offset:count:)``); a corrupt entry is dropped
    /// and the image fetched again.
    func readFromDisk(
        _ url: ImageURL, _ record: CacheRecord, offset: Int, count: Int,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        guard let slice = readOpened(record, of: url, offset: offset, count: count) else {
            return read(url, offset: offset, count: count, reply: reply)
        }
        reply(.success(slice))
    }

    func endFlight(_ key: String, _ download: Download) {
        state.withLock { $0.inFlight.end(key, download) }
    }

    /// Answers a caller of a revalidation once its head is known: the cached copy on 304 or when the origin cannot be
    /// reached, the new body otherwise, the error when the origin says the image is gone.
    func waitForRevalidation(_ download: Download, fallback: ImageSource, reply: @escaping SourceReply) {
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
    func notModified(_ download: Download, key: String, fallback: ImageSource, head: ResponseHead) {
        let renewal = freshness.renewal(
            of: fallback, url: download.url, under: download.rules, by: head, validatedAt: now())
        state.withLock { $0.counters.notModified += 1 }
        tiers.renew(key, fallback: fallback, renewal)
        logger.info(
            "revalidated: 304 Not Modified, fresh until \(renewal.expiresAt)",
            metadata: ["url": "\(download.url)"])
        endFlight(key, download)
    }
}
