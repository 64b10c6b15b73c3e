import Foundation
import ImgfsModel
import ImgfsStore
import Logging

/// Decides where a URL is served from, for ``ImageRepository``: a transfer in flight (joined, and promoted to the
/// asker's priority), a cached copy (fresh; expired but the last attempt failed; or revalidated), a remembered failure,
/// or a new transfer, which it files in flight for the repository to start outside the lock.
///
/// Guarantees: the in-flight table is read and changed under `state`'s lock, so at most one transfer per cache key is
/// ever filed; a refused host (`--allow-host`, `--deny-private-networks`, a policy rule's `deny: true`), or a cached
/// copy that came from a refused address, is neither served nor fetched (the refusal is remembered as the URL's last
/// error); an asker whose interest is withdrawn starts nothing. One decision is made under one snapshot of the request
/// rules, which the transfer it files carries (``FetchRequest/rules``, ``Download/rules``).
struct SourceResolver: Sendable {
    /// Where a URL is served from, decided now: a source (or failure), or a revalidation whose answer decides.
    enum Resolution {
        case ready(Result<ImageSource, FetchError>)
        case revalidating(Download, fallback: ImageSource)
    }

    /// What the repository does with a decision: answer, or start the transfer filed in flight (outside the lock).
    enum Step {
        case answer(Resolution)
        case start(Download, FetchRequest, fallback: ImageSource?)
    }

    private enum Decision {
        case step(Step)
        case refuse(String)
    }

    let configuration: RepositoryConfiguration
    let state: Locked<RepositoryState>
    let tiers: CacheTiers
    let freshness: Freshness
    let abandoned: AbandonedTransfers
    let openHandles: OpenHandleCounter
    let now: @Sendable () -> Date
    let logger: Logger

    /// Where `url` is served from, decided now; a new transfer is filed in flight, for the caller to start (of the kind
    /// `start` says, when no copy is cached).
    func step(
        _ url: ImageURL, refresh: Bool, interest: Interest?, priority: FetchPriority, start: TransferStart
    ) -> Step {
        let priority = max(priority, url.requestedPriority), key = url.cacheKey, rules = configuration.rules.current
        if let refusal = configuration.addressPolicy.refusal(cachedHost: url.host)
            ?? rules.profile(for: url.host).refusal
        {
            return .answer(.ready(.failure(refused(key, url, refusal))))
        }
        // Looked up before taking the lock: a disk record may need a read of its metadata file.
        let cachedBefore = state.withLock { $0.inFlight[key] } == nil ? tiers.source(key, counting: true) : nil
        let decision = state.withLock { state -> Decision in
            if let flight = state.inFlight[key] {
                state.counters.joined += 1
                if state.inFlight.promote(key, to: priority) { flight.download.promote(to: priority) }
                if let fallback = flight.fallback {
                    return .step(.answer(.revalidating(flight.download, fallback: fallback)))
                }
                return .step(.answer(.ready(.success(.download(flight.download)))))
            }
            let failure = state.failures.recent(key, now: now(), memory: configuration.failureMemory)
            // A transfer may have finished (and filed its bytes) since the look-up above: look again before starting
            // another. Only this rare path reads under the lock.
            if let cached = cachedBefore ?? tiers.source(key, counting: false) {
                if let refusal = configuration.addressPolicy.refusal(cachedFrom: cached.remoteAddress) {
                    return .refuse(refusal)
                }
                return .step(
                    decide(
                        url, rules, cached: cached, refresh: refresh, failure: failure, interest: interest, &state))
            }
            if let failure { return .step(.answer(.ready(.failure(failure)))) }
            if configuration.policy == .cacheOnly && configuration.sharedTier == nil {
                return .step(.answer(.ready(.failure(.notCached))))
            }
            if interest?.isWithdrawn == true { return .step(.answer(.ready(.failure(.cancelled)))) }
            var request = FetchRequest(url: url, priority: priority)
            request.probeBytes = start == .whole ? nil : ImageRepository.probeBytes
            request.pausesAtProbe = start == .lookup || start == .lookupToRead
            request.expectsOpen = start == .lookupToRead
            return .step(file(url, rules, &state, request: request, fallback: nil))
        }
        switch decision {
        case .step(let step): return step
        case .refuse(let refusal): return .answer(.ready(.failure(refused(key, url, refusal))))
        }
    }

    /// A URL the address policy refuses: remembered as its last error (for `imgfs why`), logged, not fetched.
    private func refused(_ key: String, _ url: ImageURL, _ refusal: String) -> FetchError {
        let error = FetchError.refused(refusal)
        if state.withLock({ $0.failures.setLastError(error, forKey: key) }) {
            logger.warning(
                "refused: \(refusal); neither fetched nor served from the cache",
                metadata: ["url": "\(url)"])
        }
        return error
    }

    /// What the rules say of a cached copy: a reload is due (`--policy reload`, not fetched yet this session), and
    /// whether it is fresh enough to serve (always without `refresh`, and under `cache-only`).
    func verdict(
        _ url: ImageURL, _ rules: RequestRules, cached: ImageSource, refresh: Bool, _ state: borrowing RepositoryState
    ) -> (reload: Bool, fresh: Bool) {
        let reload = configuration.policy == .reload && refresh && !state.fetchedThisSession.contains(url.cacheKey)
        let fresh =
            !refresh || configuration.policy == .cacheOnly
            || freshness.isFresh(cached, of: url, under: rules, now: now())
        return (reload, fresh)
    }

    /// A cached copy exists: serve it, or revalidate (or reload) it.
    private func decide(
        _ url: ImageURL, _ rules: RequestRules, cached: ImageSource, refresh: Bool, failure: FetchError?,
        interest: Interest?,
        _ state: inout RepositoryState
    ) -> Step {
        let (reload, fresh) = verdict(url, rules, cached: cached, refresh: refresh, state)
        if !reload && fresh {
            return .answer(.ready(.success(cached)))
        }
        if !reload, let failure {
            state.counters.staleServed += 1
            logger.debug(
                "serving an expired copy: the last attempt failed (\(failure))",
                metadata: ["url": "\(url.withoutFragment)"])
            return .answer(.ready(.success(cached)))
        }
        if interest?.isWithdrawn == true { return .answer(.ready(.failure(.cancelled))) }
        state.counters.revalidations += reload ? 0 : 1
        let request = reload ? FetchRequest(url: url) : cached.validators(for: url)
        return file(url, rules, &state, request: request, fallback: cached)
    }

    /// Files a new transfer of `url` in flight, made under `rules`.
    private func file(
        _ url: ImageURL, _ rules: RequestRules, _ state: inout RepositoryState, request: FetchRequest,
        fallback: ImageSource?
    ) -> Step {
        var request = request
        request.rules = rules
        if abandoned.recently(url.cacheKey) { request.holdSeconds = AbandonedTransfers.restartHold }
        // Read-ahead and prefetching want their transfers until they call them off; others, whoever has them open.
        let (openHandles, aheadOfReaders) = (openHandles, request.priority != .waited)
        let download = Download(
            url: url.withoutFragment, rules: rules, limits: configuration.limits, memory: configuration.bodyMemory,
            probeLimit: request.probeBytes, pausesAtProbe: request.pausesAtProbe,
            isHeld: { aheadOfReaders || openHandles(url) > 0 })
        state.inFlight.begin(url.cacheKey, .init(download: download, fallback: fallback, priority: request.priority))
        state.fetchedThisSession.insert(url.cacheKey)
        state.counters.transfers += 1
        return .start(download, request, fallback: fallback)
    }
}

// MARK: - ImageSource

/// Where a request for an image is served from: the memory cache, the disk cache, or a transfer (under way or just
/// finished, whose bytes readers can already read).
public enum ImageSource: Sendable {
    case memory(CachedImage)
    case disk(CacheRecord)
    case download(Download)

    /// The metadata, the whole body when it is in memory, the file of a disk entry when one was opened for the
    /// kernel (``ImageRepository/opening(_:interest:fileAbove:glance:reply:)``), and whether the body is still
    /// arriving (a transfer has not delivered all of it yet).
    public typealias Found = (metadata: ImageMetadata, body: ImageSlice?, file: KernelReadableBody?, arriving: Bool)
    /// Answers a look-up: what was found, or why nothing could be.
    public typealias FoundReply = @Sendable (Result<Found, FetchError>) -> Void

    /// The metadata (and whole body, when in memory) of a resolved source: at once, or when a transfer knows it.
    static func answer(_ result: Result<ImageSource, FetchError>, interest: Interest?, reply: @escaping FoundReply) {
        switch result {
        case .failure(let error):
            reply(.failure(error))
        case .success(.download(let download)):
            download.whenMetadataKnown(interest: interest) { result in
                let body = download.arrivedBody
                reply(result.map { ($0, body, nil, body == nil) })
            }
        case .success(.memory(let image)):
            reply(
                .success(
                    (image.metadata, ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size), nil, false)
                ))
        case .success(let source):
            reply(.success((source.metadata!, nil, nil, false)))
        }
    }

    /// The image's metadata as known now (nil for a transfer whose size is not known yet).
    public var metadata: ImageMetadata? {
        switch self {
        case .memory(let image): image.metadata
        case .disk(let record): record.metadata
        case .download(let download): download.currentMetadata
        }
    }

    /// The tier this source is, as extended attributes name it.
    var tier: ImageReport.Source {
        switch self {
        case .memory: .memory
        case .disk: .disk
        case .download: .network
        }
    }

    /// How long the stored response was fresh for (0 for a transfer).
    var lifetime: TimeInterval {
        switch self {
        case .memory(let image): max(0, image.expiresAt.timeIntervalSince(image.validatedAt))
        case .disk(let record): max(0, record.expiresAt.timeIntervalSince(record.lastValidated))
        case .download: 0
        }
    }

    /// Whether the stored response's expiry came from its headers (nil: not known, or a transfer).
    var expiryFromHeaders: Bool? {
        switch self {
        case .memory(let image): image.expiryFromHeaders
        case .disk(let record): record.expiryFromHeaders
        case .download: nil
        }
    }

    /// The numeric address the cached bytes came from, when known.
    var remoteAddress: String? {
        switch self {
        case .memory(let image): image.remoteAddress
        case .disk(let record): record.remoteAddress
        case .download: nil
        }
    }

    /// The conditional request that revalidates this cached copy of `url` (a plain one when nothing validates it).
    func validators(for url: ImageURL) -> FetchRequest {
        guard let metadata else { return FetchRequest(url: url) }
        return FetchRequest(url: url, etag: metadata.etag, lastModified: metadata.lastModified)
    }
}

// MARK: - InFlightTable

/// The work under way, one per cache key: what callers join instead of starting another (as Nuke's `TaskPool`).
/// Two kinds share it: transfers of images (by URL key) and productions of variants (by variant key, a distinct
/// SHA-256; ``VariantStore``).
///
/// Guarantees: at most one piece of work per key; a flight is ended only by the download that began it, so a late
/// completion of an earlier download never ends a newer flight of the same key; a production is begun by its first
/// caller, joined by every later one, and ended once, handing back everyone who joined. Not thread-safe by itself: it
/// lives in the repository's locked state, so that looking for work under way, a remembered failure and a cached copy
/// is one decision.
struct InFlightTable {
    /// One transfer and, for a revalidation, the cached copy served on 304 or when the origin cannot be reached.
    struct Flight {
        let download: Download
        let fallback: ImageSource?
        /// The class it waits in for admission (raised when a waiting reader joins).
        var priority: FetchPriority = .waited
    }

    /// A variant being made: the replies of everyone waiting for it.
    struct Production {
        var waiting: [VariantStore.VariantReply]
    }

    private enum Work {
        case transfer(Flight)
        case production(Production)
    }

    private var works: [String: Work] = [:]

    /// The transfer under way for `key`.
    subscript(key: String) -> Flight? {
        guard case .transfer(let flight) = works[key] else { return nil }
        return flight
    }

    /// How many transfers are under way.
    var count: Int {
        works.values.count { if case .transfer = $0 { true } else { false } }
    }

    mutating func begin(_ key: String, _ flight: Flight) {
        works[key] = .transfer(flight)
    }

    /// Raises the flight of `key` to `priority` when it is less urgent; returns whether it was.
    mutating func promote(_ key: String, to priority: FetchPriority) -> Bool {
        guard var flight = self[key], priority < flight.priority else { return false }
        flight.priority = priority
        works[key] = .transfer(flight)
        return true
    }

    mutating func end(_ key: String, _ download: Download) {
        if self[key]?.download === download { works[key] = nil }
    }

    // MARK: - Productions of variants

    /// Adds `reply` to the production of `key`; returns true when none was under way (the caller begins it).
    mutating func join(_ key: String, _ reply: @escaping VariantStore.VariantReply) -> Bool {
        guard case .production(var production) = works[key] else {
            works[key] = .production(Production(waiting: [reply]))
            return true
        }
        works[key] = nil
        production.waiting.append(reply)
        works[key] = .production(production)
        return false
    }

    /// Whether a production of `key` is under way.
    func isProducing(_ key: String) -> Bool {
        if case .production = works[key] { true } else { false }
    }

    /// Ends the production of `key`; returns everyone who waited for it.
    mutating func finishProduction(_ key: String) -> [VariantStore.VariantReply] {
        guard case .production(let production) = works[key] else { return [] }
        works[key] = nil
        return production.waiting
    }
}

// MARK: - RememberedFailures

/// Failures remembered per cache key: recent ones answer later requests without a transfer (the failed-URL blacklist
/// of the image loaders) or a decode, and the last one of each key is kept for its error attribute until it succeeds.
/// Two kinds share it: failed transfers of images (by URL key) and failed productions of variants (by variant key,
/// with the validator of the original they were made from; ``VariantStore``).
///
/// Guarantees: a transfer's failure is answered again only within its memory (``FailureMemory``: permanent for 404,
/// 410 and unresolvable hosts, transient for the rest), after which it is forgotten; a cancelled transfer is
/// remembered neither way (nobody's fault), nor is one ended by a shutdown or by a change of the image under the
/// transfer (``FetchError/changed(_:)``: only its last error is kept, and the next use fetches the new version); a
/// variant's failure is answered again only to a production of the same validator; at most 10,000 last errors are
/// kept, of both kinds together. Not thread-safe by itself: it lives in the repository's locked state.
struct RememberedFailures {
    /// A failure, of either kind.
    private enum Failure: Equatable {
        case transfer(FetchError)
        case variant(VariantError)
    }

    /// A failure that answers again: a transfer's within its memory after `at`, a variant's while its original keeps
    /// `validator`.
    private struct Recent {
        let failure: Failure
        let at: Date
        let validator: String?
    }

    private var recent: [String: Recent] = [:]
    private var last: [String: Failure] = [:]
    private static let lastErrorLimit = 10_000

    mutating func record(_ key: String, _ error: FetchError, at date: Date) {
        if case .changed = error {
            // The image changed under a transfer: the next use fetches its new version, at once.
            setLastError(error, forKey: key)
            return
        }
        guard error != .cancelled && error != .shutDown else { return }
        recent[key] = Recent(failure: .transfer(error), at: date, validator: nil)
        setLastError(error, forKey: key)
    }

    /// Records `error` as the last one of `key` (a refusal, which is not a failed transfer); returns whether it is
    /// new for `key`.
    @discardableResult
    mutating func setLastError(_ error: FetchError, forKey key: String) -> Bool {
        setLast(.transfer(error), forKey: key)
    }

    /// The failure of `key` while it is remembered (forgotten once its memory has passed).
    mutating func recent(_ key: String, now: Date, memory: FailureMemory) -> FetchError? {
        guard let entry = recent[key], case .transfer(let error) = entry.failure else { return nil }
        let duration = error.meansGone || error.isUnresolvable ? memory.permanent : memory.transient
        if now.timeIntervalSince(entry.at) < duration { return error }
        recent[key] = nil
        return nil
    }

    func lastError(_ key: String) -> FetchError? {
        guard case .transfer(let error) = last[key] else { return nil }
        return error
    }

    /// A fetch of `key` succeeded, or a variant under `key` was made.
    mutating func clearLastError(_ key: String) { last[key] = nil }

    /// `rm` of the file: the next access tries again.
    mutating func forget(_ key: String) { recent[key] = nil }

    /// `imgfs purge`: the next access of every URL tries again (last errors stay, for `imgfs why`; so do the failures
    /// of variants, which are answered again only for an unchanged original).
    mutating func forgetTransfers() {
        recent = recent.filter { entry in
            if case .variant = entry.value.failure { return true }
            return false
        }
    }

    // MARK: - Variants

    /// Remembers the failure of the variant under `key` made from an original of `validator`.
    mutating func remember(_ key: String, _ error: VariantError, validator: String, at date: Date) {
        recent[key] = Recent(failure: .variant(error), at: date, validator: validator)
    }

    /// The remembered failure of the variant under `key` when it was made from an original of `validator`.
    func recent(_ key: String, validator: String) -> VariantError? {
        guard let entry = recent[key], entry.validator == validator, case .variant(let error) = entry.failure else {
            return nil
        }
        return error
    }

    /// Records `error` as the last one of the variant under `key`.
    mutating func setLastError(_ error: VariantError, forKey key: String) {
        setLast(.variant(error), forKey: key)
    }

    /// The last failure of the variant under `key`, until it is made.
    func lastVariantError(_ key: String) -> VariantError? {
        guard case .variant(let error) = last[key] else { return nil }
        return error
    }

    /// Sets the last failure of `key`; returns whether it is new for `key`.
    @discardableResult
    private mutating func setLast(_ failure: Failure, forKey key: String) -> Bool {
        if last[key] == nil, last.count >= Self.lastErrorLimit, let any = last.keys.first { last[any] = nil }
        defer { last[key] = failure }
        return last[key] != failure
    }
}
