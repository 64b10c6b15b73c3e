import Foundation
import ImgfsModel
import ImgfsStore
import ImgfsWorkers
import Logging

/// Where image bytes come from: the memory cache, the disk cache or the network, in that order, with one transfer
/// per URL however many callers ask. It orchestrates parts that each do one job: ``SourceResolver`` (where a URL is
/// served from), ``CacheTiers``, ``InFlightTable``, ``RememberedFailures``, ``Freshness``, ``DiskWriteScheduler``,
/// ``AbandonedTransfers``; `+Completion` (filing a finished transfer or a 304), `+Opening` (an open's disk file or
/// body) and `+Management` hold the rest.
///
/// Guarantees:
/// - While a transfer of a URL (without fragment) is under way, every caller joins it; no second transfer starts.
/// - A cached image is served without the network while it is fresh. An expired one is revalidated with
///   If-None-Match / If-Modified-Since when it is looked up or opened: a 304 renews it without a new download; a new
///   body replaces it; when the origin cannot be reached (or answers 5xx) the expired copy is served (stale-if-error)
///   and the log says so; a 404 or 410 drops it.
/// - `cache-only` never contacts the origin (with a shared tier it may read the shared store, nothing else); `reload`
///   fetches each URL again the first time it is used.
/// - A URL whose host the address policy refuses is refused whether or not it is cached, and so is a cached copy that
///   came from an address the policy refuses (``CacheRecord/remoteAddress``).
/// - A 404, 410 or unresolvable host is remembered for `failureMemory.permanent`, other failures for
///   `failureMemory.transient`; within that time the error is answered without a request.
/// - A complete body is put in the memory cache and, unless the response forbade storing it, written to the disk cache
///   in the background; a body too large for the memory cache stays joinable as a transfer until that write is done,
///   so no caller ever misses both.
/// - A corrupt disk entry is dropped and fetched again transparently.
public final class ImageRepository: Sendable {
    /// How the repository caches (``RepositoryConfiguration``).
    public typealias Configuration = RepositoryConfiguration
    typealias SourceReply = @Sendable (Result<ImageSource, FetchError>) -> Void

    /// The memory and disk caches (`ls` lists them; purges empty them).
    public let tiers: CacheTiers
    /// The mount's request rules (``RepositoryConfiguration/rules``).
    public var rules: RequestRulesHolder { configuration.rules }
    var memory: MemoryCache { tiers.memory }
    var disk: (any DiskCaching)? { tiers.disk }
    private let fetcher: any ImageFetching
    let configuration: Configuration
    let logger: Logger
    let now: @Sendable () -> Date
    /// When cached copies are fresh.
    let freshness: Freshness
    let state = Locked(RepositoryState())
    let diskWrites: DiskWriteScheduler
    /// Transfers called off in the last second (their restart is held back briefly).
    let abandoned = AbandonedTransfers()
    let contentChanges = ContentChangeAnnouncer()
    /// Where each URL is served from (under `state`'s lock).
    let resolver: SourceResolver
    /// How many file handles are open on an image (a transfer with one open is wanted).
    let openHandles = OpenHandleCounter()
    /// The probes that wait for someone to want the rest (``ImageRepository+Probes``).
    let probed = ProbedDownloads()

    /// A repository that fetches with `fetcher` (under ``CachePolicy/cacheOnly`` with a shared tier, from the tier's
    /// store alone), caches in `memory` and `disk`, and writes the disk on `diskWriter`; `now` gives the time.
    public init(
        fetcher: any ImageFetching, memory: MemoryCache, disk: (any DiskCaching)?, configuration: Configuration,
        logger: Logger, now: @escaping @Sendable () -> Date = { Date() },
        diskWriter: any JobRunning = WorkerPool(name: "imgfs-disk")
    ) {
        self.fetcher = configuration.policy == .cacheOnly ? configuration.sharedTier?.storeOnly ?? fetcher : fetcher
        let writes = DiskWriteScheduler(
            worker: diskWriter, pacing: configuration.diskWrites, memory: memory,
            logger: logger)
        self.diskWrites = writes
        self.tiers = CacheTiers(
            memory: memory, disk: disk, writes: writes, bodyMemory: configuration.bodyMemory,
            rules: configuration.rules, logger: logger)
        self.configuration = configuration
        self.logger = logger
        self.now = now
        self.freshness = Freshness(expiry: configuration.expiry, minimumFreshness: configuration.minimumFreshness)
        self.resolver = SourceResolver(
            configuration: configuration, state: state, tiers: tiers, freshness: freshness, abandoned: abandoned,
            openHandles: openHandles, now: now, logger: logger)
    }

    /// Installs what tells how many file handles are open on an image: a transfer whose image is open is wanted, so
    /// the fetcher never calls it off to make room.
    public func onOpenHandles(_ count: @escaping @Sendable (ImageURL) -> Int) {
        openHandles.install(count)
    }

    /// Called (``ContentChangeAnnouncer``) when a cached image is replaced by a new body or is gone (404, 410).
    public func onContentChanged(_ handler: @escaping @Sendable (ImageURL) -> Void) {
        contentChanges.observe(handler)
    }

    // MARK: - Serving

    /// For a lookup: starts whatever work the URL needs (a transfer in the `priority` class) and reports what is known
    /// now, without waiting. `.success(nil)`: the size is not known yet; `whenKnown`, if given, is called once it is
    /// (or with the failure). One resolution serves both, so a lookup that waits is not counted as a second caller;
    /// `glance` is told what it found. `start` says what kind of transfer it starts (``TransferStart``). Without
    /// `continuesProbe` (a lookup, which may be a stat's), a probe it finds is not asked for the rest.
    public func prepare(
        _ url: ImageURL, interest: Interest? = nil, priority: FetchPriority = .waited, start: TransferStart = .whole,
        continuesProbe: Bool = true, glance: (CacheGlance) -> Void = { _ in },
        whenKnown: Download.MetadataReply? = nil
    ) -> Result<ImageMetadata?, FetchError> {
        let later: SourceReply = { result in
            guard let whenKnown else { return }
            ImageSource.answer(result, interest: interest) { whenKnown($0.map(\.metadata)) }
        }
        let resolution = resolveNow(
            url, refresh: true, interest: interest, priority: priority, start: start, continuesProbe: continuesProbe)
        glance(resolution.glance)
        switch resolution {
        case .ready(.failure(let error)):
            return .failure(error)
        case .ready(.success(let source)):
            if let metadata = source.metadata { return .success(metadata) }
            later(.success(source))
            return .success(nil)
        case .revalidating(let download, let fallback):
            waitForRevalidation(download, fallback: fallback, reply: later)
            return .success(nil)
        }
    }

    /// The image's metadata once known. With `refresh`, an expired copy is revalidated first (lookup and open do that;
    /// stat and read do not). `start`: ``TransferStart/whole`` or ``TransferStart/probe`` (a stat).
    public func metadata(
        _ url: ImageURL, refresh: Bool, interest: Interest? = nil, start: TransferStart = .whole,
        reply: @escaping @Sendable (Result<ImageMetadata, FetchError>) -> Void
    ) {
        resolve(url, refresh: refresh, interest: interest, start: start) { result in
            ImageSource.answer(result, interest: interest) { reply($0.map(\.metadata)) }
        }
    }

    /// ``metadata(_:refresh:interest:reply:)``, with the whole body when the source that answered has all of it in
    /// memory (the memory cache, or a transfer whose bytes have all arrived): the bytes match the metadata, since both
    /// come from the same source.
    public func metadataAndBody(
        _ url: ImageURL, refresh: Bool, interest: Interest? = nil,
        reply: @escaping ImageSource.FoundReply
    ) {
        resolve(url, refresh: refresh, interest: interest) { result in
            ImageSource.answer(result, interest: interest, reply: reply)
        }
    }

    /// Bytes `offset ..< offset + count` (fewer at the end), as soon as they are available.
    public func read(
        _ url: ImageURL, offset: Int, count: Int, interest: Interest? = nil,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        resolve(url, refresh: false, interest: interest) { [self] result in
            switch result {
            case .failure(let error):
                reply(.failure(error))
            case .success(.download(let download)):
                download.read(offset: offset, count: count, interest: interest, reply)
            case .success(.memory(let image)):
                reply(.success(ImageSlice(image.bytes, size: image.metadata.size, offset: offset, count: count)))
            case .success(.disk(let record)):
                readFromDisk(url, record, offset: offset, count: count, reply: reply)
            }
        }
    }

    // MARK: - Resolution

    typealias Resolution = SourceResolver.Resolution

    /// Decides where `url` is served from; starts a transfer when needed, but never for an asker whose `interest` is
    /// withdrawn already (an interrupt that came before the request was served: nobody would wait for it). Replies
    /// once, without locks held; `glance`, before that, with what the resolution found.
    func resolve(
        _ url: ImageURL, refresh: Bool, interest: Interest? = nil, start: TransferStart = .whole,
        glance: (CacheGlance) -> Void = { _ in }, reply: @escaping SourceReply
    ) {
        let resolution = resolveNow(url, refresh: refresh, interest: interest, start: start)
        glance(resolution.glance)
        switch resolution {
        case .ready(let result): reply(result)
        case .revalidating(let download, let fallback): waitForRevalidation(download, fallback: fallback, reply: reply)
        }
    }

    /// The decision of ``resolve(_:refresh:reply:)`` (``SourceResolver``), without waiting for anything; a transfer it
    /// files in flight is started here, outside the lock. With ``TransferStart/whole`` and `continuesProbe`, a probe it
    /// finds is continued.
    func resolveNow(
        _ url: ImageURL, refresh: Bool, interest: Interest? = nil,
        priority: FetchPriority = .waited, start: TransferStart = .whole, continuesProbe: Bool = true
    ) -> Resolution {
        diskWrites.noteRequest()
        let kind = start != .whole && !probes(max(priority, url.requestedPriority)) ? .whole : start
        switch resolver.step(url, refresh: refresh, interest: interest, priority: priority, start: kind) {
        case .answer(let resolution):
            if kind == .whole, continuesProbe, case .ready(.success(.download(let download))) = resolution {
                download.wantRest()
            }
            return resolution
        case .start(let download, let request, let fallback):
            self.start(download, request, fallback: fallback)
            return fallback.map { .revalidating(download, fallback: $0) } ?? .ready(.success(.download(download)))
        }
    }

    /// Starts a transfer filed in flight, outside the lock.
    private func start(_ download: Download, _ request: FetchRequest, fallback: ImageSource?) {
        let key = request.url.cacheKey
        logger.debug(fallback == nil ? "fetching" : "revalidating", metadata: ["url": "\(download.url)"])
        if let fallback {
            // Registered first, so it runs before any waiter is answered: a 304 renews the copy; a new body makes the
            // kernel drop the pages and attributes it cached of the old one.
            download.whenHeadKnown { [self] result in
                guard case .success(let head) = result else { return }
                if head.isNotModified {
                    notModified(download, key: key, fallback: fallback, head: head)
                } else {
                    if let kept = tentativeFetchTime(fallback, head) { download.keepFetchTime(kept) }
                    contentChanges.announce(download.url)
                }
            }
        }
        diskWrites.transferStarted()
        if download.probeLimit != nil { installProbe(download, fetcher: fetcher) }
        download.whenFinished { [self] error in
            diskWrites.transferEnded()
            finished(download, key: key, fallback: fallback, error: error)
        }
        download.attach(fetcher.start(request, observer: download))
    }
}

// MARK: - ImageRepository+Opening

extension ImageRepository {
    // MARK: - Opening

    /// What an open found: the metadata (and body, or file) for its answer, and what its reads are served from.
    public typealias Opened = (found: ImageSource.Found, body: OpenedBody)
    /// Called once with what an open found, or its failure.
    public typealias OpenedReply = @Sendable (Result<Opened, FetchError>) -> Void

    /// For an open: ``metadataAndBody(_:refresh:interest:reply:)`` (revalidating an expired copy), where an image
    /// found in the disk cache comes with its file, verified, when it is larger than `fileAbove` bytes (the kernel may
    /// read that by itself: the body does not come into memory), and with its whole body otherwise (read into the
    /// memory cache as its first read would, so the adapter can hand it over with the open). An unusable disk entry is
    /// dropped and the image resolved again (fetched). The answer says what the open file's reads are served from
    /// (``OpenedBody``), so they need not resolve the URL again; `glance` is told what the resolution found.
    public func opening(
        _ url: ImageURL, interest: Interest? = nil, fileAbove: Int, glance: (CacheGlance) -> Void = { _ in },
        reply: @escaping OpenedReply
    ) {
        resolve(url, refresh: true, interest: interest, glance: glance) { [self] result in
            let record: CacheRecord
            switch result {
            case .failure(let error):
                return reply(.failure(error))
            case .success(.disk(let found)):
                record = found
            case .success(let source):
                return ImageSource.answer(.success(source), interest: interest) { found in
                    reply(found.map { ($0, OpenedBody(source)) })
                }
            }
            if record.size > fileAbove {
                switch tiers.openDiskFile(record, of: url) {
                case .opened(let file):
                    state.withLock { $0.counters.diskHits += 1 }
                    reply(.success(((record.metadata, nil, file, false), .disk(record))))
                case .unavailable:
                    reply(.success(((record.metadata, nil, nil, false), .disk(record))))
                case .dropped:
                    opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
                }
                return
            }
            guard let body = tiers.readFromDisk(record, of: url, offset: 0, count: record.size) else {
                return opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
            }
            state.withLock { $0.counters.diskHits += 1 }
            reply(.success(((record.metadata, body, nil, false), .bytes(body))))
        }
    }

    /// Bytes `offset ..< offset + count` of the disk entry `record` an open file holds; nil when the entry is
    /// unusable (it is dropped, and the caller resolves the URL again).
    package func readOpened(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) -> ImageSlice? {
        guard let slice = tiers.readFromDisk(record, of: url, offset: offset, count: count) else { return nil }
        state.withLock { $0.counters.diskHits += 1 }
        return slice
    }
}

// MARK: - ImageRepository+Completion

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

// MARK: - ImageRepository+Management

// MARK: - Management: what `rm`, `imgfs purge`, memory pressure, statistics and the xattrs ask of the repository

extension ImageRepository {
    /// A reader of `url` went away (closed its last handle, or was interrupted): the transfer is called off when nobody
    /// wants it any more and less than half of it has arrived (``Download/cancelIfAbandoned(openHandles:)``).
    public func readerGaveUp(_ url: ImageURL, openHandles: Int) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }),
            download.cancelIfAbandoned(openHandles: openHandles, beforeCancelling: { abandoned.mark(url.cacheKey) })
        else { return }
        logger.debug(
            "transfer cancelled: nobody wants it any more and less than half had arrived",
            metadata: ["url": "\(url)"])
    }

    /// Drops `url` from both caches and forgets its failures (`rm` of the file).
    public func evict(_ url: ImageURL) {
        tiers.remove(url.cacheKey)
        state.withLock { $0.failures.forget(url.cacheKey) }
        logger.info("evicted", metadata: ["url": "\(url.withoutFragment)"])
    }

    /// Waits until every disk write queued so far has finished (at unmount, so nothing fetched is lost); writes that
    /// were waiting for a pause or for transfers to end go at once.
    public func flushDiskWrites() { diskWrites.flush() }

    /// Empties what `kind` names (`imgfs purge`); the repository's clock and expiry decide what has expired. Whatever
    /// the kind, remembered transfer failures are forgotten too: the next access of a failed URL tries it again.
    public func purge(_ kind: CacheTiers.PurgeKind) {
        tiers.purge(kind, now: now(), expiry: configuration.expiry)
        state.withLock { $0.failures.forgetTransfers() }
    }

    /// Counters and sizes, for statistics.
    public func statistics() -> RepositoryStatistics {
        let (counters, inFlight) = state.withLock { ($0.counters, $0.inFlight.count) }
        return tiers.statistics(counters: counters, inFlight: inFlight, sharedTier: configuration.sharedTier?.counters)
    }

    /// The last failure of the URL cached under `key`, until it is fetched successfully (for `imgfs why`); never
    /// fetches.
    public func lastError(forKey key: String) -> FetchError? { state.withLock { $0.failures.lastError(key) } }

    /// Why the URL cached under `key` cannot be read now, as far as is known without fetching (for `imgfs why`): its
    /// last failure; else, under `cache-only` without a shared tier, ``FetchError/notCached`` when no cache holds it;
    /// else nil.
    public func knownObstacle(forKey key: String) -> FetchError? {
        if let error = lastError(forKey: key) { return error }
        guard configuration.policy == .cacheOnly, configuration.sharedTier == nil, !tiers.holds(key) else { return nil }
        return .notCached
    }

    /// What is known about `url` now, without fetching anything (for extended attributes).
    public func report(_ url: ImageURL) -> ImageReport {
        let key = url.cacheKey
        let (flight, error) = state.withLock { ($0.inFlight[key], $0.failures.lastError(key)) }
        let cached = tiers.source(key, counting: false)
        let source = cached ?? flight.map { .download($0.download) }
        return ImageReport(
            source: source?.tier, metadata: source?.metadata,
            expiresAt: source.flatMap { freshness.expiry(of: $0, url: url, under: configuration.rules.current) },
            error: error)
    }
}

// MARK: - OpenedBody

/// What an open file of an image reads from, found by its open
/// (``ImageRepository/opening(_:interest:fileAbove:glance:reply:)``) and held by it, so that its reads need not ask
/// where the URL is served from again: the transfer the open started or joined, the whole body, or a disk-cache
/// entry.
///
/// Guarantees: it is the source that answered the open, so its bytes are the ones of the size the open reported.
public enum OpenedBody: Sendable {
    /// A transfer under way (or just finished): reads wait for their bytes on it.
    case download(Download)
    /// The whole image, in memory.
    case bytes(ImageSlice)
    /// An entry of the disk cache, read from it (a body that fits the memory cache comes into memory at the first
    /// read).
    case disk(CacheRecord)

    /// What the open that resolved to `source` reads from.
    init(_ source: ImageSource) {
        switch source {
        case .download(let download): self = .download(download)
        case .memory(let image): self = .bytes(ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size))
        case .disk(let record): self = .disk(record)
        }
    }
}

// MARK: - CacheGlance

/// What a lookup or an open found when its URL was resolved, before it waited for anything: whether a cache held the
/// image, and its size when known. The list and host counters take it from that one resolution, so the filesystem
/// need not look into the caches itself first.
///
/// Guarantees: it describes the source the resolution chose (a cached copy being revalidated counts as cached, with
/// its size; a transfer under way as not cached, with its size once its headers told it).
public struct CacheGlance: Sendable {
    /// A cache (memory or disk) held the image.
    public var cached: Bool
    /// The image's size, when known now.
    public var size: Int?
}

extension SourceResolver.Resolution {
    /// What this resolution found, for ``CacheGlance``.
    var glance: CacheGlance {
        switch self {
        case .ready(.failure): CacheGlance(cached: false, size: nil)
        case .ready(.success(.download(let download))): CacheGlance(cached: false, size: download.currentMetadata?.size)
        case .ready(.success(let source)): CacheGlance(cached: true, size: source.metadata?.size)
        case .revalidating(_, let fallback): CacheGlance(cached: true, size: fallback.metadata?.size)
        }
    }
}

// MARK: - AbandonedTransfers

/// The URLs whose transfer was called off because nobody wanted it, for a second.
///
/// Readers interrupted together make the kernel send more requests for the name as they die (processes that waited
/// behind the interrupted lookup try it again, and some get their request out before the signal stops them): a
/// transfer such a request starts within ``grace`` of the call-off is held back for ``restartHold`` before it is
/// sent, so the interrupt that follows calls it off unsent.
///
/// Guarantees: thread safe; entries older than ``grace`` are dropped whenever one is added.
final class AbandonedTransfers: Sendable {
    static let grace = Duration.seconds(1)
    /// Seconds a transfer started within ``grace`` is held before it is sent.
    static let restartHold = 0.05

    private let calledOff = Locked<[String: ContinuousClock.Instant]>([:])

    /// `key`'s transfer is being called off (marked before it is, so no lookup can come in between).
    func mark(_ key: String) {
        let now = ContinuousClock.now
        calledOff.withLock { table in
            table = table.filter { now - $0.value < Self.grace }
            table[key] = now
        }
    }

    /// Whether `key`'s transfer was called off less than ``grace`` ago.
    func recently(_ key: String) -> Bool {
        guard let when = calledOff.withLock({ $0[key] }) else { return false }
        return ContinuousClock.now - when < Self.grace
    }
}

// MARK: - ImageRepository+FirstFetch

// MARK: - A stable mtime: the first fetch time, kept across refetches of the same content

extension ImageRepository {
    /// The fetch time a refetch reports from its head on, when it looks like the cached copy it replaces: no
    /// Last-Modified on either, the same size and ETag (or none). ``keptFetchTime(_:_:_:)`` checks the body once it
    /// is complete.
    func tentativeFetchTime(_ fallback: ImageSource, _ head: ResponseHead) -> Date? {
        let previous: ImageMetadata
        switch fallback {
        case .memory(let image): previous = image.metadata
        case .disk(let record): previous = record.metadata
        case .download: return nil
        }
        guard previous.lastModified == nil,
            head.lastModified == nil, head.contentLength == previous.size, head.etag == previous.etag
        else { return nil }
        return previous.fetchedAt
    }

    /// The fetch time to file a complete body with, so that its mtime (``ImageMetadata/modificationTime``) stays what
    /// it was while the content does: the cached copy's fetch time when the origin sends no Last-Modified and the new
    /// body has the cached copy's size, ETag (or none) and CRC-32; otherwise the body's own fetch time (now, when the
    /// transfer reported the cached copy's tentatively and the body differs). Called before the new body replaces the
    /// cached copy.
    func keptFetchTime(_ key: String, _ metadata: ImageMetadata, _ bytes: ImageBytes) -> Date {
        guard metadata.lastModified == nil, let previous = tiers.lookup(key), previous.metadata.lastModified == nil
        else { return metadata.fetchedAt }
        let tentative = previous.metadata.fetchedAt == metadata.fetchedAt
        let differs = tentative ? now() : metadata.fetchedAt
        guard previous.metadata.size == metadata.size, previous.metadata.etag == metadata.etag else { return differs }
        let checksum: (ImageBytes, Int) -> UInt32 = { bytes, size in
            bytes.withSegments(offset: 0, count: size) { pieces in
                pieces.reduce(UInt32(0)) { CRC32.update($0, with: $1) }
            }
        }
        let previousChecksum: UInt32
        switch previous {
        case .memory(let image):
            guard image.bytes.count >= metadata.size else { return differs }
            previousChecksum = checksum(image.bytes, metadata.size)
        case .disk(let record):
            guard record.checksum != 0 else { return differs }
            previousChecksum = record.checksum
        }
        guard bytes.count >= metadata.size, checksum(bytes, metadata.size) == previousChecksum else { return differs }
        return previous.metadata.fetchedAt
    }
}

// MARK: - ImageFetching

/// Receives the events of one transfer, in order: at most one head, then body bytes, then exactly one completion.
///
/// Implementations must be thread safe: events may arrive on any thread (never two at once for one transfer).
public protocol TransferObserving: AnyObject, Sendable {
    /// The final response is a 2xx (or a 304 to a conditional request) with this head; body bytes follow. Returns false
    /// to stop the transfer (the observer has then failed it itself; the completion that follows does not matter).
    @discardableResult
    func transferDidReceive(head: ResponseHead) -> Bool
    /// More body bytes, valid only during the call. Returns false to stop the transfer, as above.
    @discardableResult
    func transferDidReceive(bytes: UnsafeRawBufferPointer) -> Bool
    /// A retry could not resume: the body starts again from byte 0 with a new response `head` (its bytes follow).
    /// The observer must never let readers see a mix of the two bodies; it returns false when it cannot take the new
    /// body (and has then failed the transfer itself).
    func transferDidRestart(head: ResponseHead) -> Bool
    /// The transfer ended: nil when the whole body arrived, else why not.
    func transferDidComplete(error: FetchError?)
    /// Whether anyone still waits for this transfer. A fetcher may call off a transfer nobody wants when a transfer
    /// somebody waits for needs its place; asked on any thread.
    var isWanted: Bool { get }
    /// Whether someone wants the whole body (an open joined): a transfer that pauses after its probe bytes
    /// (``FetchRequest/pausesAtProbe``) then goes on; asked on the fetch thread.
    var wantsRest: Bool { get }
}

extension TransferObserving {
    /// By default every transfer is wanted until it ends.
    public var isWanted: Bool { true }

    /// By default the whole body is wanted.
    public var wantsRest: Bool { true }

    /// By default a body cannot start again: the observer fails with ``FetchError/changed``.
    public func transferDidRestart(head: ResponseHead) -> Bool {
        transferDidComplete(error: .changed("the retry got a new body and this observer cannot start again"))
        return false
    }
}

/// A transfer that can be called off.
public protocol TransferHandle: Sendable {
    /// Stops the transfer; its observer then completes with ``FetchError/cancelled`` unless it already completed.
    func cancel()
    /// Raises a transfer still waiting for admission to `priority` (a reader joined it); no effect once it started.
    func promote(to priority: FetchPriority)
    /// The observer now wants the rest (``TransferObserving/wantsRest``): a transfer paused after its probe bytes goes
    /// on at once; no effect on any other.
    func restWanted()
}

extension TransferHandle {
    /// Does nothing: a fetcher without an admission queue starts every transfer at once.
    public func promote(to priority: FetchPriority) {}

    /// Does nothing: a fetcher that never pauses has nothing to resume.
    public func restWanted() {}
}

/// One GET: the URL and, for a revalidation, the validators of the cached copy.
public struct FetchRequest: Sendable, Equatable {
    /// The URL to get, without fragment.
    public var url: ImageURL
    /// Sent as If-None-Match.
    public var etag: String?
    /// Sent as If-Modified-Since.
    public var lastModified: Date?
    /// Seconds to hold the request before sending it; a cancel meanwhile stops it unsent.
    public var holdSeconds = 0.0
    /// Its class in the fetcher's admission queue.
    public var priority: FetchPriority
    /// The request rules it was made under (headers, cookie file, refusal, transfers per host): a reload of the rules
    /// changes requests made afterwards only.
    public var rules = RequestRules.empty
    /// For a probe: how many first bytes to ask for (`Range: bytes=0-…`); a server that ignores Range is cut off
    /// after them (when it announced a Content-Length; else the whole body is taken, since its size is needed).
    public var probeBytes: Int?
    /// For a lookup's transfer (the kernel does not say whether a stat or an open follows): with ``probeBytes``, the
    /// GET asks for the whole image (no `Range`) and, once it has delivered those first bytes of a longer body with a
    /// Content-Length, goes on only if the observer wants the rest (``TransferObserving/wantsRest``); otherwise it
    /// pauses for a short grace time (the fetcher's), goes on when the rest is wanted in time
    /// (``TransferHandle/restWanted()``), and else ends there as a probe cut off after its first bytes does.
    public var pausesAtProbe = false
    /// For a lookup's transfer whose caller is expected to open (``TransferStart/lookupToRead``): the GET goes on past
    /// the probe's bytes for a short window (the fetcher's) before it pauses, so an open that comes late on a busy
    /// machine finds it running; if it ends as a probe, the bytes past the probe's are dropped.
    public var expectsOpen = false
    /// For the rest of a probed image: the probe's head, whose total size and strong validator the continuation
    /// (`Range: bytes=N-` with `If-Range`) must match; a 200 instead starts the body again from byte 0.
    public var continuedHead: ResponseHead?
    /// For the rest of a probed image: how many bytes the probe holds (N).
    public var continuedFrom = 0

    /// A GET of `url`, conditional when a validator is given, under no request rules.
    public init(url: ImageURL, etag: String? = nil, lastModified: Date? = nil, priority: FetchPriority = .waited) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.priority = priority
    }

    /// Whether this is a conditional request (a 304 answer is then a success).
    public var isConditional: Bool { etag != nil || lastModified != nil }
}

/// Starts HTTP(S) GET transfers.
///
/// Implementations must be thread safe, must not block the caller on the network, and must complete every transfer
/// they start exactly once (also when shut down). A final 2xx status, or 304 for a conditional request, delivers its
/// head (a 304 has no body); any other final status completes with ``FetchError/httpStatus(_:)`` and no head.
public protocol ImageFetching: Sendable {
    func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle
}

// MARK: - RequestRules+Settings

// MARK: - Per-host settings: what a policy rule overrides of the mount's settings

extension RequestRules {
    /// `base` with the expiry and cache-control of `host`'s rule.
    public func expiry(for host: String, default base: ExpiryPolicy) -> ExpiryPolicy {
        guard let rule = rule(for: host) else { return base }
        var policy = base
        policy.lifetime = rule.expire ?? base.lifetime
        policy.honorsCacheControl = rule.cacheControl ?? base.honorsCacheControl
        return policy
    }

    /// `base` with the max size of `host`'s rule.
    public func limits(for host: String, default base: Download.Limits) -> Download.Limits {
        guard let maxSize = rule(for: host)?.maxSize else { return base }
        var limits = base
        limits.maxSize = maxSize
        return limits
    }

    /// Whether the disk copy of `url` (its text) is kept however long expired.
    public func keepsOffline(url: String) -> Bool {
        guard !hostRules.rules.isEmpty, let url = try? ImageURL(url) else { return false }
        return rule(for: url.host)?.keepOffline == true
    }

    /// The transfers per host of the rule for `host`, if it sets one.
    public func transfersPerHost(host: String) -> Int? {
        rule(for: host)?.transfersPerHost
    }
}
