import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - Making variants

extension VariantStore {
    /// Joins the production of the variant under `key` (in the repository's ``InFlightTable``), or starts it: the
    /// original's metadata first (revalidated when expired), then, unless a variant with the same validator is cached
    /// already, the whole original is waited for here, outside the pool, and only then is a worker given the variant
    /// to decode.
    func make(_ kind: VariantKind, _ url: ImageURL, key: String, reply: @escaping VariantReply) {
        make(
            url, key: key, validator: { Self.validator(kind, $0) }, reply: reply,
            produce: { [self] original, validator, body in
                produce(kind, url, key: key, original: original, validator: validator, arrived: body)
            })
    }

    /// ``make(_:_:key:reply:)`` for any product of the original: `validator` names the version a cached product
    /// must carry, and `produce` runs on a worker with the original's metadata, that validator and its bytes.
    func make(
        _ url: ImageURL, key: String, validator: @escaping @Sendable (ImageMetadata) -> String,
        reply: @escaping VariantReply,
        produce: @escaping @Sendable (ImageMetadata, String, ImageSlice?) -> Void
    ) {
        guard repository.state.withLock({ $0.inFlight.join(key, reply) }) else { return }
        repository.metadata(url, refresh: true) { [self] result in
            switch result {
            case .failure(let error):
                failed(key, .original(error))
            case .success(let original):
                let validator = validator(original)
                if let cached = cachedVariant(key, counting: false), cached.metadata.etag == validator {
                    return finish(key, .success(renewed(cached, key: key, url: url)))
                }
                if let failure = repository.state.withLock({ $0.failures.recent(key, validator: validator) }) {
                    return finish(key, .failure(failure))
                }
                whenOriginalArrived(url) { [self] arrived in
                    switch arrived {
                    case .failure(let error):
                        failed(key, .original(error))
                    case .success(let body):
                        workers.submit { produce(original, validator, body) }
                    }
                }
            }
        }
    }

    /// Calls `then` once the whole original is here, without occupying a worker: at once when it is cached, else when
    /// the transfer under way ends. A transfer that completed hands over its bytes (the memory cache holds the same
    /// bytes when it could take them), so a worker never fetches what just arrived; a cached original is read by the
    /// worker itself, so a variant waiting for a worker holds no bytes of a cached original.
    func whenOriginalArrived(
        _ url: ImageURL, then: @escaping @Sendable (Result<ImageSlice?, FetchError>) -> Void
    ) {
        repository.resolve(url, refresh: false) { result in
            switch result {
            case .failure(let error):
                then(.failure(error))
            case .success(.download(let download)):
                download.whenFinished(waiting: true) { error in
                    if let error { return then(.failure(error)) }
                    let size = download.currentMetadata?.size ?? 0
                    then(.success(download.completeBytes.map { ImageSlice($0, size: size, offset: 0, count: size) }))
                }
            case .success:
                then(.success(nil))
            }
        }
    }

    /// `decode` run over `bytes` as one buffer (pieces joined when it arrived in several), with the milliseconds it
    /// took, both counted; nil when it parked (admission said: later).
    func timedDecode(
        _ bytes: ImageSlice, _ decode: (UnsafeRawBufferPointer) -> Result<MadeVariant, VariantError>?
    ) -> (made: Result<MadeVariant, VariantError>, milliseconds: Int)? {
        let started = DispatchTime.now().uptimeNanoseconds
        let outcome = bytes.withSegments { pieces -> Result<MadeVariant, VariantError>? in
            if pieces.count == 1 { return decode(pieces[0]) }
            var whole: [UInt8] = []
            whole.reserveCapacity(bytes.count)
            for piece in pieces { whole.append(contentsOf: piece) }
            return whole.withUnsafeBytes { decode($0) }
        }
        guard let made = outcome else { return nil }
        let milliseconds = Int(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
        counters.withLock {
            $0.decodeMilliseconds += milliseconds
            if case .success = made { $0.made += 1 }
        }
        return (made, milliseconds)
    }

    /// On a worker: takes the whole original (`arrived`, else read from the caches), decodes it and files the variant.
    private func produce(
        _ kind: VariantKind, _ url: ImageURL, key: String, original: ImageMetadata, validator: String,
        arrived: ImageSlice?
    ) {
        let bytes: ImageSlice
        if let arrived, arrived.count == original.size {
            bytes = arrived
        } else {
            switch wholeOriginal(url, size: original.size) {
            case .failure(let error): return failed(key, .original(error))
            case .success(let slice): bytes = slice
            }
        }
        let specification = VariantSpecification(
            kind: kind, maximumPixels: configuration.maximumPixels, jpegQuality: configuration.jpegQuality,
            crop: configuration.crop)
        let retry: @Sendable () -> Void = { [self] in
            workers.submit { [self] in
                produce(kind, url, key: key, original: original, validator: validator, arrived: bytes)
            }
        }
        // Parked (nil): `retry` submits it again once a decode under way ends.
        guard let (made, milliseconds) = timedDecode(bytes, { admitted($0, specification, retry: retry) }) else {
            return
        }
        switch made {
        case .failure(let error):
            logger.warning(
                "variant failed: \(error)", metadata: ["url": "\(url.withoutFragment)", "variant": "\(kind)"])
            switch error {
            case .decodeTooLarge:
                break  // Not remembered: the budget follows the memory cgroup's limit.
            default:
                repository.state.withLock { $0.failures.remember(key, error, validator: validator, at: now()) }
            }
            failed(key, error)
        case .success(let variant):
            let made = "\(variant.width)x\(variant.height) \(variant.format.rawValue), \(variant.bytes.count) bytes"
            logger.debug(
                "variant made: \(made) in \(milliseconds) ms",
                metadata: ["url": "\(url.withoutFragment)", "variant": "\(kind)"])
            let filed = file(variant, kind: kind, url: url, key: key, original: original, validator: validator)
            finish(key, .success(filed))
        }
    }

    /// Decodes `original` once ``decodeBudget`` admits its cost: a failure when it can never fit, nil when it is parked
    /// (`retry` runs when a decode under way ends). Images over `--tune max-pixels` go to the maker, which refuses
    /// them.
    private func admitted(
        _ original: UnsafeRawBufferPointer, _ specification: VariantSpecification,
        retry: @escaping @Sendable () -> Void
    ) -> Result<MadeVariant, VariantError>? {
        let cost = maker.decodeCost(of: original, for: specification.kind)
        let pixels = (cost?.width ?? 0).multipliedReportingOverflow(by: cost?.height ?? 0)
        guard let cost, cost.bytes > 0, !pixels.overflow, pixels.partialValue <= specification.maximumPixels else {
            return maker.makeVariant(of: original, specification)
        }
        let limit = decodeLimit
        switch decodeBudget.admit(cost.bytes, limit: limit, retry: retry) {
        case .refused:
            return .failure(.decodeTooLarge(cost, budget: limit))
        case .parked:
            logger.debug("decode parked until another ends: \(cost)")
            return nil
        case .admitted:
            defer { decodeBudget.release(cost.bytes) }
            return maker.makeVariant(of: original, specification)
        }
    }

    /// The whole original from the caches (``whenOriginalArrived(_:then:)`` waited for it already; only an original
    /// evicted from every cache since then is fetched again, and waited for on this worker).
    func wholeOriginal(_ url: ImageURL, size: Int) -> Result<ImageSlice, FetchError> {
        let answer = Locked<Result<ImageSlice, FetchError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        repository.read(url, offset: 0, count: size) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let result = answer.withLock { $0! }
        if case .success(let slice) = result, slice.count != size {
            return .failure(.truncated(expected: size, received: slice.count))
        }
        return result
    }

    /// Puts a made variant into memory and queues its disk write (``CacheTiers/queueWrite(_:as:then:)``: found there
    /// until it lands, even when memory could not hold it); when the queue is full, writes it at once.
    func file(
        _ made: MadeVariant, kind: VariantKind, url: ImageURL, key: String, original: ImageMetadata,
        validator: String
    ) -> Variant {
        let previous = cachedVariant(key, counting: false)
        let metadata = ImageMetadata(
            size: made.bytes.count, contentType: made.format.contentType, etag: validator,
            lastModified: original.lastModified, fetchedAt: original.fetchedAt)
        let image = CachedImage(
            url: url.withoutFragment, bytes: ImageBytes(copying: made.bytes), metadata: metadata,
            expiresAt: repository.report(url).expiresAt ?? now())
        memory.insert(image, forKey: key)
        if let disk {
            let record = CacheRecord(
                key: key, url: url.withoutFragment.string, size: metadata.size,
                contentType: metadata.contentType, etag: validator,
                lastModified: metadata.lastModified, fetchedAt: metadata.fetchedAt,
                expiresAt: image.expiresAt, lastAccess: now())
            if !tiers.queueWrite(image, as: record, then: {}) {
                do {
                    try made.bytes.withUnsafeBytes { _ = try disk.store(record, body: $0) }
                } catch {
                    logger.warning("could not write a variant to the disk cache: \(error)", metadata: ["url": "\(url)"])
                }
            }
        }
        if let previous, previous.metadata.etag != validator { replaced(kind, url) }
        return .memory(image)
    }

    /// A cached variant whose original was found unchanged: it takes the original's (possibly renewed) expiry.
    func renewed(_ cached: Variant, key: String, url: ImageURL) -> Variant {
        guard let expiresAt = repository.report(url).expiresAt, expiresAt > cached.expiresAt else { return cached }
        memory.update(key) { $0.expiresAt = expiresAt }
        if var record = disk?.record(forKey: key) {
            record.expiresAt = expiresAt
            try? disk?.update(record)
        }
        switch cached {
        case .memory(var image):
            image.expiresAt = expiresAt
            return .memory(image)
        case .disk(var record):
            record.expiresAt = expiresAt
            return .disk(record)
        }
    }

    /// Counts a production that failed (not a remembered failure answered again), then answers with it.
    func failed(_ key: String, _ error: VariantError) {
        counters.withLock { $0.failures[error.reason, default: 0] += 1 }
        finish(key, .failure(error))
    }

    /// Answers everyone waiting for `key` and ends its production; the outcome is the variant's last error, or
    /// clears it.
    func finish(_ key: String, _ result: Result<Variant, VariantError>) {
        let waiting = repository.state.withLock { state -> [VariantReply] in
            switch result {
            case .success: state.failures.clearLastError(key)
            case .failure(let error): state.failures.setLastError(error, forKey: key)
            }
            return state.inFlight.finishProduction(key)
        }
        for reply in waiting { reply(result) }
    }
}
