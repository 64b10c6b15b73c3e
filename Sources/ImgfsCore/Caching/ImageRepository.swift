import Foundation
import Logging

/// Where image bytes come from: the memory cache, the disk cache or the network, in that order, with one transfer
/// per URL however many callers ask. It orchestrates small parts that each do one job: ``InFlightTable`` (joining),
/// ``RememberedFailures`` (the failed-URL blacklist), ``DiskWriteScheduler`` (paced background writes), revalidation
/// (`ImageRepository+Revalidation.swift`), filing a finished transfer (`+Completion`) and management (`+Management`).
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
public final class ImageRepository: Sendable {
    public typealias Configuration = RepositoryConfiguration
    public typealias FailureMemory = ImgfsCore.FailureMemory
    public typealias Source = ImageSource

    public typealias SourceReply = @Sendable (Result<Source, FetchError>) -> Void
    public typealias FoundReply = @Sendable (Result<(metadata: ImageMetadata, body: ImageSlice?), FetchError>) -> Void

    /// The memory and disk caches (`ls` lists them; purges empty them).
    public let tiers: CacheTiers
    var memory: MemoryCache { tiers.memory }
    var disk: (any DiskCaching)? { tiers.disk }
    private let fetcher: any ImageFetching
    let configuration: Configuration
    let logger: Logger
    let now: @Sendable () -> Date
    let state = Locked(RepositoryState())
    let diskWrites: DiskWriteScheduler
    private let contentChangeHandler = Locked<(@Sendable (ImageURL) -> Void)?>(nil)

    public init(fetcher: any ImageFetching, memory: MemoryCache, disk: (any DiskCaching)?, configuration: Configuration,
                logger: Logger, now: @escaping @Sendable () -> Date = { Date() },
                diskWriter: any SerialWorker = DispatchSerialWorker(label: "imgfs.disk-writes")) {
        self.fetcher = fetcher
        self.diskWrites = DiskWriteScheduler(worker: diskWriter, pacing: configuration.diskWrites, logger: logger)
        self.tiers = CacheTiers(memory: memory, disk: disk, bodyMemory: configuration.bodyMemory, logger: logger)
        self.configuration = configuration
        self.logger = logger
        self.now = now
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
    /// `priority` is the class of a transfer it starts (a waiting caller raises a joined transfer to its class).
    public func prepare(_ url: ImageURL, interest: Interest? = nil, priority: FetchPriority = .waited,
                        whenKnown: Download.MetadataReply? = nil) -> Result<ImageMetadata?, FetchError> {
        let later: SourceReply = { result in
            guard let whenKnown else { return }
            Self.answer(result, interest: interest) { whenKnown($0.map(\.metadata)) }
        }
        switch resolveNow(url, refresh: true, priority: priority) {
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
    /// stat and read do not).
    public func metadata(_ url: ImageURL, refresh: Bool, interest: Interest? = nil,
                         reply: @escaping @Sendable (Result<ImageMetadata, FetchError>) -> Void) {
        metadataAndBody(url, refresh: refresh, interest: interest) { reply($0.map(\.metadata)) }
    }

    /// ``metadata(_:refresh:interest:reply:)``, with the whole body when the source that answered has all of it in
    /// memory (the memory cache, or a transfer whose bytes have all arrived): the bytes match the metadata, since both
    /// come from the same source.
    public func metadataAndBody(_ url: ImageURL, refresh: Bool, interest: Interest? = nil, reply: @escaping FoundReply) {
        resolve(url, refresh: refresh) { result in Self.answer(result, interest: interest, reply: reply) }
    }

    /// Bytes `offset ..< offset + count` (fewer at the end), as soon as they are available.
    public func read(_ url: ImageURL, offset: Int, count: Int, interest: Interest? = nil,
                     reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void) {
        resolve(url, refresh: false) { [self] result in
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

    /// The metadata (and whole body, when in memory) of a resolved source: at once, or when a transfer knows it.
    private static func answer(_ result: Result<Source, FetchError>, interest: Interest?, reply: @escaping FoundReply) {
        switch result {
        case .failure(let error):
            reply(.failure(error))
        case .success(.download(let download)):
            download.whenMetadataKnown(interest: interest) { result in reply(result.map { ($0, download.arrivedBody) }) }
        case .success(.memory(let image)):
            reply(.success((image.metadata, ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size))))
        case .success(let source):
            reply(.success((source.metadata!, nil)))
        }
    }

    // MARK: - Resolution

    /// Where a URL is served from, decided now: a source (or failure), or a revalidation whose answer decides.
    enum Resolution {
        case ready(Result<Source, FetchError>)
        case revalidating(Download, fallback: Source)
    }

    private enum Step {
        case answer(Resolution)
        case start(Download, FetchRequest, fallback: Source?)
    }

    /// Decides where `url` is served from; starts a transfer when needed. Replies once, without locks held.
    func resolve(_ url: ImageURL, refresh: Bool, reply: @escaping SourceReply) {
        switch resolveNow(url, refresh: refresh) {
        case .ready(let result): reply(result)
        case .revalidating(let download, let fallback): waitForRevalidation(download, fallback: fallback, reply: reply)
        }
    }

    /// The decision of ``resolve(_:refresh:reply:)``, without waiting for anything.
    func resolveNow(_ url: ImageURL, refresh: Bool, priority: FetchPriority = .waited) -> Resolution {
        let priority = max(priority, url.requestedPriority), key = url.cacheKey
        diskWrites.noteRequest()
        // Looked up before taking the lock: a disk record may need a read of its metadata file.
        let cachedBefore = state.withLock { $0.inFlight[key] } == nil ? tiers.source(key, counting: true) : nil
        let step = state.withLock { state -> Step in
            if let flight = state.inFlight[key] {
                state.counters.joined += 1
                if state.inFlight.promote(key, to: priority) { flight.download.promote(to: priority) }
                if let fallback = flight.fallback { return .answer(.revalidating(flight.download, fallback: fallback)) }
                return .answer(.ready(.success(.download(flight.download))))
            }
            let failure = state.failures.recent(key, now: now(), memory: configuration.failureMemory)
            // A transfer may have finished (and filed its bytes) since the look-up above: look again before starting
            // another. Only this rare path reads under the lock.
            if let cached = cachedBefore ?? tiers.source(key, counting: false) {
                return _decide(url, cached: cached, refresh: refresh, failure: failure, &state)
            }
            if let failure { return .answer(.ready(.failure(failure))) }
            if configuration.policy == .cacheOnly { return .answer(.ready(.failure(.notCached))) }
            return _start(url, &state, request: FetchRequest(url: url, priority: priority), fallback: nil)
        }
        switch step {
        case .answer(let resolution):
            return resolution
        case .start(let download, let request, let fallback):
            start(download, request, fallback: fallback)
            return fallback.map { .revalidating(download, fallback: $0) } ?? .ready(.success(.download(download)))
        }
    }

    /// A cached copy exists: serve it, or revalidate (or reload) it.
    private func _decide(_ url: ImageURL, cached: Source, refresh: Bool, failure: FetchError?,
                         _ state: inout RepositoryState) -> Step {
        let key = url.cacheKey
        let reload = configuration.policy == .reload && refresh && !state.fetchedThisSession.contains(key)
        if !reload && (!refresh || configuration.policy == .cacheOnly || isFresh(cached)) {
            return .answer(.ready(.success(cached)))
        }
        if !reload, let failure {
            state.counters.staleServed += 1
            logger.debug("serving an expired copy: the last attempt failed (\(failure))",
                          metadata: ["url": "\(url.withoutFragment)"])
            return .answer(.ready(.success(cached)))
        }
        state.counters.revalidations += reload ? 0 : 1
        let request = reload ? FetchRequest(url: url) : cached.validators(for: url)
        return _start(url, &state, request: request, fallback: cached)
    }

    private func _start(_ url: ImageURL, _ state: inout RepositoryState, request: FetchRequest, fallback: Source?) -> Step {
        let download = Download(url: url.withoutFragment, limits: configuration.limits, memory: configuration.bodyMemory)
        state.inFlight.begin(url.cacheKey, .init(download: download, fallback: fallback, priority: request.priority))
        state.fetchedThisSession.insert(url.cacheKey)
        state.counters.transfers += 1
        return .start(download, request, fallback: fallback)
    }

    /// Starts a transfer filed in flight, outside the lock.
    private func start(_ download: Download, _ request: FetchRequest, fallback: Source?) {
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
                    contentChangeHandler.withLock { $0 }?(download.url)
                }
            }
        }
        diskWrites.transferStarted()
        download.whenFinished { [self] error in
            diskWrites.transferEnded()
            finished(download, key: key, fallback: fallback, error: error)
        }
        download.attach(fetcher.start(request, observer: download))
    }
}
