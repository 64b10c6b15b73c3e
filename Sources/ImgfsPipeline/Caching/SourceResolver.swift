import Foundation
import ImgfsModel
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
            request.probeBytes = start == .probe ? ImageRepository.probeBytes : nil
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

    /// A cached copy exists: serve it, or revalidate (or reload) it.
    private func decide(
        _ url: ImageURL, _ rules: RequestRules, cached: ImageSource, refresh: Bool, failure: FetchError?,
        interest: Interest?,
        _ state: inout RepositoryState
    ) -> Step {
        let key = url.cacheKey
        let reload = configuration.policy == .reload && refresh && !state.fetchedThisSession.contains(key)
        let fresh =
            !refresh || configuration.policy == .cacheOnly
            || freshness.isFresh(cached, of: url, under: rules, now: now())
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
            probeLimit: request.probeBytes, isHeld: { aheadOfReaders || openHandles(url) > 0 })
        state.inFlight.begin(url.cacheKey, .init(download: download, fallback: fallback, priority: request.priority))
        state.fetchedThisSession.insert(url.cacheKey)
        state.counters.transfers += 1
        return .start(download, request, fallback: fallback)
    }
}
