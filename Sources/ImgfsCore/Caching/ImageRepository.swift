import Foundation
import Logging
import Synchronization

/// Where image bytes come from: the memory cache, the disk cache or the network, in that order, with one transfer
/// per URL however many callers ask (the in-flight dedup).
///
/// Guarantees:
/// - While a transfer of a URL (without fragment) is under way, every caller joins it; no second transfer starts.
/// - A cached image is served without the network while it is fresh. An expired one is revalidated with
///   If-None-Match / If-Modified-Since when it is looked up or opened: a 304 renews it without a new download; a new
///   body replaces it; when the origin cannot be reached (or answers 5xx) the expired copy is served (stale-if-error)
///   and the log says so; a 404 or 410 drops it.
/// - `cache-only` never starts a transfer; `reload` fetches each URL again the first time it is used.
/// - A 404, 410 or unresolvable host is remembered for `failureMemory.permanent`, other failures for
///   `failureMemory.transient`; within that time the error is answered without a request.
/// - A complete body is put in the memory cache and, unless the response forbade storing it, written to the disk cache
///   in the background; a body too large for the memory cache stays joinable as a transfer until that write is done,
///   so no caller ever misses both.
/// - A corrupt disk entry is dropped and fetched again transparently.
public final class ImageRepository: @unchecked Sendable {
    /// Caching behaviour.
    public struct Configuration: Sendable {
        public var policy = CachePolicy.cacheElseLoad
        public var expiry = ExpiryPolicy()
        public var failureMemory = FailureMemory()
        /// An image the origin vouched for this recently is fresh whatever its expiry, so that one program's lookup,
        /// open and reads see one fetch even of a `no-store` or `max-age=0` image.
        public var minimumFreshness: TimeInterval = 1
        /// What a body must satisfy (size cap, image signature).
        public var limits = Download.Limits()
        /// Background writes of large bodies yield to readers: a write of more than `diskWriteYieldSize` bytes waits,
        /// before each step, until no request has come for `diskWriteQuietPeriod` and no transfer runs…
        public var diskWriteYieldSize = 1 << 20
        public var diskWriteQuietPeriod: TimeInterval = 0.05
        /// …but never longer than this after it was queued (which bounds what waiting writes hold in memory).
        public var diskWriteMaxDelay: TimeInterval = 2
        /// Writes of smaller bodies wait while transfers are running (also at most `diskWriteMaxDelay`), as long as
        /// the bodies waiting add up to at most this many bytes; 0 writes them at once.
        public var diskWriteHoldLimit = 16 << 20
        /// Where image bodies are kept in memory (file-backed ones can be read by the kernel itself).
        public var bodyMemory = BodyMemory.ordinary

        public init() {}
    }

    /// How long failures are remembered.
    public struct FailureMemory: Sendable {
        /// For 404, 410 and unresolvable hosts (`--negative-ttl`; 0 with `--retry-failed`).
        public var permanent: TimeInterval
        /// For everything else: long enough that one program's stat, open and read see one attempt.
        public var transient: TimeInterval

        public init(permanent: TimeInterval = 60, transient: TimeInterval = 1) {
            self.permanent = permanent
            self.transient = transient
        }
    }

    /// Where a request is served from.
    public enum Source: Sendable {
        case memory(CachedImage)
        case disk(CacheRecord)
        case download(Download)
    }

    public typealias SourceReply = @Sendable (Result<Source, FetchError>) -> Void

    struct InFlight {
        let download: Download
        /// The cached copy being revalidated, served on 304 and when the origin cannot be reached.
        let fallback: Source?
    }

    struct State {
        var inFlight: [String: InFlight] = [:]
        var failures: [String: (error: FetchError, at: Date, size: Int?)] = [:]
        /// Keys fetched in this session (for the reload policy).
        var fetchedThisSession: Set<String> = []
        var counters = RepositoryCounters()
        var lastFullDiskReport = Date.distantPast
        /// The last failure of each URL until it is fetched successfully (for the error attribute); bounded.
        var lastErrors: [String: FetchError] = [:]
    }

    let memory: MemoryCache
    let disk: (any DiskCaching)?
    private let fetcher: any ImageFetching
    let configuration: Configuration
    let logger: Logger
    let now: @Sendable () -> Date
    private let state = Locked(State())
    /// Bodies whose disk write is queued, by key, until the write has landed (or failed): a tier between memory and
    /// disk, so a body the memory cache evicted meanwhile is still found.
    let queuedWrites = Locked<[String: CachedImage]>([:])
    /// When each URL's transfer was last called off because nobody wanted it (kept for ``abandonedGrace``).
    let abandoned = Locked<[String: ContinuousClock.Instant]>([:])
    /// How long after a transfer was called off a lookup does not start it again.
    static let abandonedGrace = Duration.seconds(1)
    /// Seconds a transfer started within ``abandonedGrace`` is held before it is sent.
    static let restartHold = 0.05
    /// Where disk-cache writes run, one at a time.
    let diskWrites: any SerialWorker
    /// When a request last came (monotonic nanoseconds), for ``waitForQuietMoment(queuedAt:)``.
    let lastRequest = Atomic<UInt64>(0)
    /// Transfers started and not yet finished, and the bytes of small bodies queued for the disk, for
    /// ``waitForTransfers(queuedAt:)``.
    let activeTransfers = Atomic<Int>(0)
    let heldWriteBytes = Atomic<Int>(0)
    /// Bytes of all bodies whose disk write is queued: held in memory until written, so beyond the memory cache's
    /// budget the writes stop waiting for a quiet moment.
    let queuedWriteBytes = Atomic<Int>(0)
    /// Until this uptime (ns), queued writes do not wait: set by a purge, so memory held for them is freed soon.
    let hurryWritesUntil = Atomic<UInt64>(0)
    /// Set during ``flushDiskWrites()``: queued writes stop waiting.
    let flushing = Atomic<Bool>(false)
    private let contentChangeHandler = Locked<(@Sendable (ImageURL) -> Void)?>(nil)

    public init(fetcher: any ImageFetching, memory: MemoryCache, disk: (any DiskCaching)?, configuration: Configuration,
                logger: Logger, now: @escaping @Sendable () -> Date = { Date() },
                diskWriter: any SerialWorker = DispatchSerialWorker(label: "imgfs.disk-writes")) {
        self.fetcher = fetcher
        self.diskWrites = diskWriter
        self.memory = memory
        self.disk = disk
        self.configuration = configuration
        self.logger = logger
        self.now = now
    }

    func withState<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    func contentChangeHandlerSnapshot() -> (@Sendable (ImageURL) -> Void)? {
        contentChangeHandler.withLock { $0 }
    }

    /// Called (on the fetching thread, before anyone is served the new bytes) when a cached image is being replaced by a
    /// new body from the origin.
    public func onContentChanged(_ handler: @escaping @Sendable (ImageURL) -> Void) {
        contentChangeHandler.withLock { $0 = handler }
    }

    // MARK: - Serving

    /// For a lookup: starts whatever work the URL needs and reports what is known now, without waiting.
    /// `.success(nil)` means the size is not known yet; then `whenKnown`, if given, is called once it is (or with the
    /// failure). One resolution serves both answers, so a lookup that waits is not counted as a second caller.
    public func prepare(_ url: ImageURL, interest: Interest? = nil,
                        whenKnown: Download.MetadataReply? = nil) -> Result<ImageMetadata?, FetchError> {
        // Whether this call has returned yet, and the answer if it came before that.
        let handoff = Locked<(returned: Bool, answer: Result<Source, FetchError>?)>((false, nil))
        resolve(url, refresh: true, interest: interest) { result in
            let late = handoff.withLock { state -> Bool in
                if !state.returned { state.answer = result }
                return state.returned
            }
            if late, let whenKnown { Self.answer(result, interest: interest) { whenKnown($0.map(\.metadata)) } }
        }
        switch handoff.withLock({ state in state.returned = true; return state.answer }) {
        case nil:
            return .success(nil)
        case .failure(let error)?:
            return .failure(error)
        case .success(let source)?:
            if let metadata = Self.currentMetadata(source) { return .success(metadata) }
            if let whenKnown { Self.answer(.success(source), interest: interest) { whenKnown($0.map(\.metadata)) } }
            return .success(nil)
        }
    }

    /// The image's metadata once known. With `refresh`, an expired copy is revalidated first (lookup and open do that;
    /// stat and read do not).
    public func metadata(_ url: ImageURL, refresh: Bool, interest: Interest? = nil,
                         reply: @escaping @Sendable (Result<ImageMetadata, FetchError>) -> Void) {
        metadataAndBody(url, refresh: refresh, interest: interest) { reply($0.map(\.metadata)) }
    }

    /// ``metadata(_:refresh:interest:reply:)``, with the whole body when the source that answered has all of it in
    /// memory (the memory cache, or a transfer whose bytes have all arrived): the bytes match the metadata, since both
    /// come from the same source.
    public func metadataAndBody(_ url: ImageURL, refresh: Bool, interest: Interest? = nil,
                                reply: @escaping @Sendable (Result<(metadata: ImageMetadata, body: ImageSlice?), FetchError>) -> Void) {
        resolve(url, refresh: refresh, interest: interest) { result in
            Self.answer(result, interest: interest, reply: reply)
        }
    }

    /// The metadata (and whole body, when in memory) of a resolved source: at once, or when a transfer knows it.
    private static func answer(_ result: Result<Source, FetchError>, interest: Interest?,
                               reply: @escaping @Sendable (Result<(metadata: ImageMetadata, body: ImageSlice?), FetchError>) -> Void) {
        switch result {
        case .failure(let error):
            reply(.failure(error))
        case .success(.download(let download)):
            download.whenMetadataKnown(interest: interest) { result in reply(result.map { ($0, download.arrivedBody) }) }
        case .success(.memory(let image)):
            reply(.success((image.metadata, ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size))))
        case .success(let source):
            reply(.success((currentMetadata(source)!, nil)))
        }
    }

    /// Bytes `offset ..< offset + count` (fewer at the end), as soon as they are available.
    public func read(_ url: ImageURL, offset: Int, count: Int, interest: Interest? = nil,
                     reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void) {
        resolve(url, refresh: false, interest: interest) { [self] result in
            switch result {
            case .failure(let error): reply(.failure(error))
            case .success(.download(let download)): download.read(offset: offset, count: count, interest: interest, reply)
            case .success(.memory(let image)): reply(.success(Self.slice(image.bytes, size: image.metadata.size, offset, count)))
            case .success(.disk(let record)): readFromDisk(url, record, offset: offset, count: count, reply: reply)
            }
        }
    }

    // MARK: - Management

    /// A reader of `url` went away (closed its last handle, or was interrupted): the transfer is called off when nobody
    /// wants it any more and less than half of it has arrived (``Download/cancelIfAbandoned(openHandles:)``).
    public func readerGaveUp(_ url: ImageURL, openHandles: Int) {
        guard let download = state.withLock({ $0.inFlight[url.cacheKey]?.download }),
              download.cancelIfAbandoned(openHandles: openHandles, beforeCancelling: { markAbandoned(url) })
        else { return }
        logger.info("transfer cancelled: nobody wants it any more and less than half had arrived", metadata: ["url": "\(url)"])
    }

    /// Drops `url` from both caches and forgets its failures (`rm` of the file).
    public func evict(_ url: ImageURL) {
        memory.remove(url.cacheKey)
        _ = queuedWrites.withLock { $0.removeValue(forKey: url.cacheKey) }
        disk?.remove(key: url.cacheKey)
        state.withLock { $0.failures[url.cacheKey] = nil }
        logger.info("evicted", metadata: ["url": "\(url.withoutFragment)"])
    }

    /// On the disk-write thread, before each step of a large body's checksum and write: waits until no request has
    /// come for ``Configuration/diskWriteQuietPeriod`` and no transfer is running (readers waiting for a transfer's
    /// bytes make no requests meanwhile), or ``Configuration/diskWriteMaxDelay`` has passed since the write was
    /// queued. Large images just fetched are often read again at once, and writing tens of megabytes competes with
    /// those reads for memory bandwidth. Small bodies do not wait for a pause (holding them back while reads came
    /// left the CPUs idle between requests, and in a VM waking an idle CPU made every small-file request slower:
    /// docs/PERFORMANCE.md), only for running transfers (``waitForTransfers(queuedAt:)``).
    func waitForQuietMoment(queuedAt: UInt64) {
        let quiet = UInt64(max(0, configuration.diskWriteQuietPeriod) * 1e9)
        waitWhileBusy(queuedAt: queuedAt) {
            let now = DispatchTime.now().uptimeNanoseconds
            let idle = now &- min(now, lastRequest.load(ordering: .relaxed))
            if idle < quiet { return quiet - idle }
            return activeTransfers.load(ordering: .relaxed) > 0 ? Self.transferPoll : nil
        }
    }

    /// On the disk-write thread, before writing a small body: waits while transfers are running, until
    /// ``Configuration/diskWriteMaxDelay`` has passed since the write was queued or the small bodies waiting exceed
    /// ``Configuration/diskWriteHoldLimit``. During a burst of fetches the writes (file creates, renames, fsyncs:
    /// a quarter of the daemon's CPU) would take CPU time from the fetches and the readers; they follow the burst.
    func waitForTransfers(queuedAt: UInt64) {
        waitWhileBusy(queuedAt: queuedAt) {
            activeTransfers.load(ordering: .relaxed) > 0
                && heldWriteBytes.load(ordering: .relaxed) <= configuration.diskWriteHoldLimit ? Self.transferPoll : nil
        }
    }

    /// How often a write waiting for transfers to end looks again (nanoseconds).
    private static let transferPoll: UInt64 = 5_000_000

    /// The waiting both rules share: sleeps for as long as `busy` says (nanoseconds; nil: the write may go), until
    /// ``Configuration/diskWriteMaxDelay`` after `queuedAt` or until a flush begins.
    private func waitWhileBusy(queuedAt: UInt64, _ busy: () -> UInt64?) {
        let deadline = queuedAt &+ UInt64(max(0, configuration.diskWriteMaxDelay) * 1e9)
        while !flushing.load(ordering: .relaxed), !mustHurryWrites, let pause = busy() {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return }
            Thread.sleep(forTimeInterval: Double(min(pause, deadline - now)) / 1e9)
        }
    }

    /// Waits until every disk write queued so far has finished (at unmount, so nothing fetched is lost); writes that
    /// were waiting for a pause or for transfers to end go at once.
    public func flushDiskWrites() {
        flushing.store(true, ordering: .relaxed)
        diskWrites.drain()
        flushing.store(false, ordering: .relaxed)
    }

    /// Empties the memory cache (a memory-pressure purge) and makes queued disk writes go at once (for the next 2 s),
    /// so the bodies they hold are freed; returns the bytes freed from the cache.
    @discardableResult
    public func purgeMemory(reason: String) -> Int {
        hurryWritesUntil.store(DispatchTime.now().uptimeNanoseconds + 2_000_000_000, ordering: .relaxed)
        let freed = memory.purge()
        logger.notice("memory purged (\(reason)): \(Quantity.describe(bytes: freed)) freed from the memory cache")
        return freed
    }

    /// What `imgfs purge` empties.
    public enum PurgeKind: String, CaseIterable, Sendable {
        /// The memory cache (as memory pressure does).
        case memory
        /// Both caches.
        case disk
        /// Expired images, from both caches.
        case expired
    }

    /// Empties what `kind` names; logs what was freed.
    public func purge(_ kind: PurgeKind) {
        switch kind {
        case .memory:
            purgeMemory(reason: "imgfs purge --memory")
        case .disk:
            let (entries, bytes) = (disk?.count ?? 0, disk?.totalBytes ?? 0)
            purgeMemory(reason: "imgfs purge --disk")
            disk?.removeAll()
            logger.notice("disk cache purged: \(entries) images, \(Quantity.describe(bytes: bytes))")
        case .expired:
            let now = now()
            for key in memory.keys where (memory.peek(key)?.expiresAt ?? .distantFuture) <= now { memory.remove(key) }
            let (entries, bytes) = disk?.sweep(now: now, removeExpiredBefore: now) ?? (0, 0)
            logger.notice("expired images purged: \(entries) from disk (\(Quantity.describe(bytes: bytes)))")
        }
    }

    /// The keys of every cached image, sorted: a snapshot to list in pages.
    public func cachedKeys() -> [String] {
        Array(Set(memory.keys).union(disk?.keys() ?? [])).sorted()
    }

    /// The URL cached under `key`, if any (reads the disk record of that one entry at most).
    public func cachedURL(forKey key: String) -> ImageURL? {
        if let image = memory.peek(key) { return image.url }
        return disk?.record(forKey: key).flatMap { try? ImageURL($0.url) }
    }

    /// Counters and sizes, for statistics.
    public func statistics() -> RepositoryStatistics {
        let (counters, inFlight) = state.withLock { ($0.counters, $0.inFlight.count) }
        return RepositoryStatistics(counters: counters, memory: memory.counters, memoryBytes: memory.totalBytes,
                                    memoryEntries: memory.count, memoryBudget: memory.budget,
                                    diskBytes: disk?.totalBytes ?? 0, diskEntries: disk?.count ?? 0,
                                    diskEvictions: disk?.evictionCount ?? 0, inFlight: inFlight)
    }

    /// The failure remembered for `url` (within its failure memory) when no cached copy exists, with the size the
    /// failed response had announced (nil when it never got that far); never fetches.
    public func knownFailure(_ url: ImageURL) -> (error: FetchError, announcedSize: Int?)? {
        guard memory.peek(url.cacheKey) == nil, disk?.record(forKey: url.cacheKey) == nil else { return nil }
        return state.withLock { state in
            guard state.inFlight[url.cacheKey] == nil, let error = _recentFailure(url.cacheKey, &state) else { return nil }
            return (error, state.failures[url.cacheKey]?.size)
        }
    }

    /// What is known about `url` now, without fetching anything (for extended attributes).
    public func report(_ url: ImageURL) -> ImageReport {
        let key = url.cacheKey
        let (flight, error) = state.withLock { ($0.inFlight[key], $0.lastErrors[key]) }
        if let image = memory.peek(key) {
            return ImageReport(source: .memory, metadata: image.metadata, expiresAt: image.expiresAt, error: error)
        }
        if let record = disk?.record(forKey: key) {
            return ImageReport(source: .disk, metadata: record.metadata, expiresAt: record.expiresAt, error: error)
        }
        if let flight {
            return ImageReport(source: .network, metadata: flight.download.currentMetadata, expiresAt: nil, error: error)
        }
        return ImageReport(source: nil, metadata: nil, expiresAt: nil, error: error)
    }

    // MARK: - Resolution

    private enum Step {
        case answer(Result<Source, FetchError>)
        case waitForRevalidation(Download, fallback: Source)
        case start(Download, FetchRequest, fallback: Source?)
    }

    /// Decides where `url` is served from; starts a transfer when needed, but never for an asker whose `interest` is
    /// withdrawn already (an interrupt that came before the request was served: nobody would wait for it). Replies
    /// once, without locks held.
    func resolve(_ url: ImageURL, refresh: Bool, interest: Interest? = nil, reply: @escaping SourceReply) {
        lastRequest.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        let key = url.cacheKey
        // Looked up before taking the lock: a disk record may need a read of its metadata file.
        let cachedBefore = state.withLock { $0.inFlight[key] } == nil ? cachedSource(key, counting: true) : nil
        let step = state.withLock { state -> Step in
            if let flight = state.inFlight[key] {
                state.counters.joined += 1
                if let fallback = flight.fallback { return .waitForRevalidation(flight.download, fallback: fallback) }
                return .answer(.success(.download(flight.download)))
            }
            let failure = _recentFailure(key, &state)
            // A transfer may have finished (and filed its bytes) since the look-up above: look again before starting
            // another. Only this rare path reads under the lock.
            if let cached = cachedBefore ?? cachedSource(key, counting: false) {
                let reload = configuration.policy == .reload && refresh && !state.fetchedThisSession.contains(key)
                if !reload && (!refresh || configuration.policy == .cacheOnly || isFresh(cached)) {
                    return .answer(.success(cached))
                }
                if !reload, let failure {
                    state.counters.staleServed += 1
                    logger.debug("serving an expired copy: the last attempt failed (\(failure))", metadata: ["url": "\(url.withoutFragment)"])
                    return .answer(.success(cached))
                }
                if interest?.isWithdrawn == true { return .answer(.failure(.cancelled)) }
                state.counters.revalidations += reload ? 0 : 1
                return _start(url, &state, request: reload ? FetchRequest(url: url) : Self.validators(url, cached), fallback: cached)
            }
            if let failure { return .answer(.failure(failure)) }
            if configuration.policy == .cacheOnly { return .answer(.failure(.notCached)) }
            if interest?.isWithdrawn == true { return .answer(.failure(.cancelled)) }
            return _start(url, &state, request: FetchRequest(url: url), fallback: nil)
        }
        switch step {
        case .answer(let result):
            reply(result)
        case .waitForRevalidation(let download, let fallback):
            waitForRevalidation(download, fallback: fallback, reply: reply)
        case .start(let download, let request, let fallback):
            logger.debug(fallback == nil ? "fetching" : "revalidating", metadata: ["url": "\(url.withoutFragment)"])
            if let fallback {
                // Registered first, so it runs before any waiter is answered: a 304 renews the copy; a new body makes
                // the kernel drop the pages and attributes it cached of the old one.
                download.whenHeadKnown { [self] result in
                    guard case .success(let head) = result else { return }
                    if head.isNotModified {
                        notModified(download, key: key, fallback: fallback, head: head)
                    } else {
                        contentChangeHandlerSnapshot()?(download.url)
                    }
                }
            }
            activeTransfers.add(1, ordering: .relaxed)
            download.whenFinished { [self] error in
                activeTransfers.subtract(1, ordering: .relaxed)
                finished(download, key: key, fallback: fallback, error: error)
            }
            download.attach(fetcher.start(request, observer: download))
            if let fallback {
                waitForRevalidation(download, fallback: fallback, reply: reply)
            } else {
                reply(.success(.download(download)))
            }
        }
    }

    private func _start(_ url: ImageURL, _ state: inout State, request: FetchRequest, fallback: Source?) -> Step {
        var request = request
        if _abandonedRecently(url.cacheKey) { request.holdSeconds = Self.restartHold }
        let download = Download(url: url.withoutFragment, limits: configuration.limits, memory: configuration.bodyMemory)
        state.inFlight[url.cacheKey] = InFlight(download: download, fallback: fallback)
        state.fetchedThisSession.insert(url.cacheKey)
        state.counters.transfers += 1
        return .start(download, request, fallback: fallback)
    }

    private func waitForRevalidation(_ download: Download, fallback: Source, reply: @escaping SourceReply) {
        download.whenHeadKnown { result in
            switch result {
            case .success(let head) where head.isNotModified: reply(.success(fallback))
            case .success: reply(.success(.download(download)))
            case .failure(let error) where error.meansGone: reply(.failure(error))
            case .failure: reply(.success(fallback))
            }
        }
    }

    private func _recentFailure(_ key: String, _ state: inout State) -> FetchError? {
        guard let (error, at, _) = state.failures[key] else { return nil }
        let memory = error.meansGone || error.isUnresolvable ? configuration.failureMemory.permanent : configuration.failureMemory.transient
        if now().timeIntervalSince(at) < memory { return error }
        state.failures[key] = nil
        return nil
    }

    private func cachedSource(_ key: String, counting: Bool) -> Source? {
        if let image = counting ? memory.image(forKey: key) : memory.peek(key) { return .memory(image) }
        if let image = queuedWrites.withLock({ $0[key] }) { return .memory(image) }
        return disk?.record(forKey: key).map { .disk($0) }
    }

    private func isFresh(_ source: Source) -> Bool {
        switch source {
        case .memory(let image): now() < max(image.expiresAt, image.validatedAt + configuration.minimumFreshness)
        case .disk(let record): now() < record.expiresAt
        case .download: true
        }
    }
}
