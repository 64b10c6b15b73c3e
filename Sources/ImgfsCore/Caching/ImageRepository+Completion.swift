import Foundation

// MARK: - What happens when a transfer ends, and reading from disk

extension ImageRepository {
    /// Files the outcome of a transfer into the caches; the transfer stays joinable until that is done.
    func finished(_ download: Download, key: String, fallback: Source?, error: FetchError?) {
        let url = download.url
        if let error {
            recordFailure(key, error, announcedSize: download.head?.contentLength)
            logger.warning("fetch failed: \(error)", metadata: ["url": "\(url)"])
            if fallback != nil {
                if error.meansGone {
                    memory.remove(key)
                    _ = queuedWrites.withLock { $0.removeValue(forKey: key) }
                    disk?.remove(key: key)
                    logger.notice("the origin says the image is gone (\(error)); dropped the cached copy", metadata: ["url": "\(url)"])
                } else {
                    countStaleServed()
                    logger.warning("origin unreachable (\(error)); serving the expired cached copy (stale-if-error)",
                                   metadata: ["url": "\(url)"])
                }
            }
            endFlight(key, download)
            return
        }
        clearLastError(key)
        guard let head = download.head, !head.isNotModified else { return endFlight(key, download) }
        let decision = configuration.expiry.decide(for: head, now: now())
        guard let bytes = download.completeBytes, let metadata = download.currentMetadata else { return endFlight(key, download) }
        let image = CachedImage(url: url, bytes: bytes, metadata: metadata, expiresAt: decision.expiresAt)
        let inMemory = memory.insert(image, forKey: key)
        // Once the memory cache has it, later callers find it there (and see its expiry); otherwise the transfer stays
        // joinable until the disk has it.
        if inMemory { endFlight(key, download) }
        guard decision.store, let disk else {
            disk?.remove(key: key)
            return endFlight(key, download)
        }
        // The queue holds its bodies in memory: beyond its bound (the disk cannot keep up with the network), a body
        // is not written; it is fetched again when next needed, if it has left memory by then.
        let queued = queuedWriteBytes.load(ordering: .relaxed)
        guard queued == 0 || queued + metadata.size <= writeQueueBound else {
            countSkippedDiskWrite()
            return endFlight(key, download)
        }
        let record = CacheRecord(key: key, url: url.string, size: metadata.size, contentType: metadata.contentType,
                                 etag: metadata.etag, lastModified: metadata.lastModified, fetchedAt: metadata.fetchedAt,
                                 expiresAt: decision.expiresAt, checksum: 0, lastAccess: now())
        let queuedAt = DispatchTime.now().uptimeNanoseconds
        // Until the write lands the queue is a tier: the memory cache may evict the body meanwhile.
        queuedWrites.withLock { $0[key] = image }
        let large = metadata.size > configuration.diskWriteYieldSize
        let held = large || configuration.diskWriteHoldLimit <= 0 ? 0 : metadata.size
        heldWriteBytes.add(held, ordering: .relaxed)
        queuedWriteBytes.add(metadata.size, ordering: .relaxed)
        diskWrites.submit { [self] in
            if held > 0 { waitForTransfers(queuedAt: queuedAt) }
            defer {
                heldWriteBytes.subtract(held, ordering: .relaxed)
                queuedWriteBytes.subtract(metadata.size, ordering: .relaxed)
                queuedWrites.withLock { writes in
                    if writes[key]?.bytes === bytes { writes[key] = nil }
                }
            }
            // A large body waits for a pause in the requests, with no transfer running, before each step of its
            // checksum and write, not only before the first: readers that come back while it is being written get
            // the machine back within a step.
            let pace = { if large { self.waitForQuietMoment(queuedAt: queuedAt) } }
            // Removed from the queue meanwhile (rm, a 404, a newer body): this write is called off. (A large body waits
            // for its first quiet moment before this check.)
            pace()
            guard queuedWrites.withLock({ $0[key]?.bytes === bytes }) else { return endFlight(key, download) }
            do {
                try bytes.withSegments(offset: 0, count: metadata.size) { pieces in
                    if pieces.count == 1 {
                        try disk.store(record, body: pieces[0], pace: pace)
                    } else {
                        let whole = pieces.flatMap { Array($0) }
                        try whole.withUnsafeBytes { _ = try disk.store(record, body: $0, pace: pace) }
                    }
                }
            } catch DiskCacheError.noSpace {
                if shouldReportFullDisk() {
                    logger.error("disk cache: no space left on device (ENOSPC); serving from memory and the network, nothing partial is kept (reported once a minute)")
                }
            } catch {
                logger.warning("could not write the disk cache: \(error)", metadata: ["url": "\(url)"])
            }
            endFlight(key, download)
        }
    }

    /// Serves a read from a disk entry: the whole image moves to memory when it fits the budget, else the range is
    /// read from the file. A corrupt entry is dropped and the image fetched again.
    func readFromDisk(_ url: ImageURL, _ record: CacheRecord, offset: Int, count: Int,
                      reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void) {
        guard let disk else { return reply(.failure(.notCached)) }
        do {
            disk.touch(key: record.key)
            countDiskHit()
            if record.size <= memory.budget {
                let bytes = ImageBytes(copying: try disk.readAll(key: record.key), memory: configuration.bodyMemory)
                memory.insert(CachedImage(url: url.withoutFragment, bytes: bytes, metadata: record.metadata,
                                          expiresAt: record.expiresAt), forKey: record.key)
                return reply(.success(Self.slice(bytes, size: record.size, offset, count)))
            }
            let piece = try disk.read(key: record.key, offset: offset, count: count)
            reply(.success(ImageSlice(bytes: ImageBytes(copying: piece), offset: 0, count: piece.count)))
        } catch {
            logger.warning("disk cache entry unusable (\(error)); fetching again", metadata: ["url": "\(url.withoutFragment)"])
            disk.remove(key: record.key)
            memory.remove(record.key)
            read(url, offset: offset, count: count, reply: reply)
        }
    }

    /// A revalidation answered 304: the cached copy is renewed and the transfer ends at once.
    func notModified(_ download: Download, key: String, fallback: Source, head: ResponseHead) {
        let validatedAt = now()
        // A 304 that says nothing about freshness keeps the lifetime the stored response had (HTTP: a 304 updates
        // only the headers it carries).
        let saysFreshness = head.cacheControl != nil || head.hasExpires || !configuration.expiry.honorsCacheControl
        let expiresAt = saysFreshness ? configuration.expiry.decide(for: head, now: validatedAt).expiresAt
            : validatedAt + Self.lifetime(of: fallback)
        countNotModified()
        if case .disk(let record) = fallback, memory.peek(key) == nil, record.size <= memory.budget,
           let body = try? disk?.readAll(key: key), let url = try? ImageURL(record.url) {
            memory.insert(CachedImage(url: url, bytes: ImageBytes(copying: body, memory: configuration.bodyMemory), metadata: record.metadata,
                                      expiresAt: expiresAt, validatedAt: validatedAt), forKey: key)
        }
        memory.update(key) { image in
            image.expiresAt = expiresAt
            image.validatedAt = validatedAt
            image.metadata.etag = head.etag ?? image.metadata.etag
        }
        if case .disk(var record) = fallback {
            record.expiresAt = expiresAt
            record.etag = head.etag ?? record.etag
            try? disk?.update(record)
        } else if var record = disk?.record(forKey: key) {
            record.expiresAt = expiresAt
            try? disk?.update(record)
        }
        logger.info("revalidated: 304 Not Modified, fresh until \(expiresAt)", metadata: ["url": "\(download.url)"])
        endFlight(key, download)
    }

    /// How long the stored response was fresh for.
    static func lifetime(of source: Source) -> TimeInterval {
        switch source {
        case .memory(let image): max(0, image.expiresAt.timeIntervalSince(image.validatedAt))
        case .disk(let record): max(0, record.expiresAt.timeIntervalSince(record.fetchedAt))
        case .download: 0
        }
    }

    static func validators(_ url: ImageURL, _ cached: Source) -> FetchRequest {
        guard let metadata = currentMetadata(cached) else { return FetchRequest(url: url) }
        return FetchRequest(url: url, etag: metadata.etag, lastModified: metadata.lastModified)
    }

    static func currentMetadata(_ source: Source) -> ImageMetadata? {
        switch source {
        case .memory(let image): image.metadata
        case .disk(let record): record.metadata
        case .download(let download): download.currentMetadata
        }
    }

    static func slice(_ bytes: ImageBytes, size: Int, _ offset: Int, _ count: Int) -> ImageSlice {
        guard offset < size else { return .empty }
        return ImageSlice(bytes: bytes, offset: offset, count: min(count, size - offset))
    }

}

// MARK: - Bookkeeping

extension ImageRepository {
    func recordFailure(_ key: String, _ error: FetchError, announcedSize: Int?) {
        withState { state in
            state.counters.failures += 1
            state.counters.errorsByKind[error.kind, default: 0] += 1
            // A transfer called off because nobody wanted it is not the origin's fault: nothing to remember.
            guard error != .cancelled && error != .shutDown else { return }
            state.failures[key] = (error, now(), announcedSize)
            if state.lastErrors.count >= 10_000, let any = state.lastErrors.keys.first { state.lastErrors[any] = nil }
            state.lastErrors[key] = error
        }
    }

    func clearLastError(_ key: String) {
        withState { $0.lastErrors[key] = nil }
    }

    func endFlight(_ key: String, _ download: Download) {
        withState { state in
            if state.inFlight[key]?.download === download { state.inFlight[key] = nil }
        }
    }

    /// Whether a full disk should be logged now (at most once a minute).
    func shouldReportFullDisk() -> Bool {
        withState { state in
            let now = now()
            guard now.timeIntervalSince(state.lastFullDiskReport) >= 60 else { return false }
            state.lastFullDiskReport = now
            return true
        }
    }

    func countStaleServed() { withState { $0.counters.staleServed += 1 } }
    func countNotModified() { withState { $0.counters.notModified += 1 } }
    func countDiskHit() { withState { $0.counters.diskHits += 1 } }
    func countSkippedDiskWrite() { withState { $0.counters.diskWritesSkipped += 1 } }
}
