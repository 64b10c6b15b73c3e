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
        let kind = start == .probe && !probes(max(priority, url.requestedPriority)) ? .whole : start
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
