import Logging
import Synchronization

/// Hands out one ``Download`` per URL, however many callers ask at once: the in-flight dedup.
///
/// Guarantees: while a download of a URL is under way or finished, every caller gets that same download and no
/// second transfer starts. A failed download is handed out again (so its error is reported without a new request)
/// for `permanentFailureMemory` when the failure is a 404, 410 or an unresolvable host, and for
/// `transientFailureMemory` otherwise; after that the next caller starts a new transfer.
public final class FetchCoordinator: @unchecked Sendable {
    /// How long failures are remembered.
    public struct FailureMemory: Sendable {
        public var permanent: Duration
        public var transient: Duration

        public init(permanent: Duration = .seconds(60), transient: Duration = .seconds(1)) {
            self.permanent = permanent
            self.transient = transient
        }
    }

    /// Counters for statistics.
    public struct Counters: Equatable, Sendable {
        /// Transfers started.
        public var started = 0
        /// Requests that joined a download another caller had started.
        public var joined = 0
        /// Failed downloads.
        public var failed = 0
    }

    private struct State {
        var downloads: [String: Download] = [:]
        var counters = Counters()
    }

    private let fetcher: any ImageFetching
    private let failureMemory: FailureMemory
    private let logger: Logger
    private let state = Mutex(State())

    public init(fetcher: any ImageFetching, failureMemory: FailureMemory = FailureMemory(), logger: Logger) {
        self.fetcher = fetcher
        self.failureMemory = failureMemory
        self.logger = logger
    }

    /// The download of `url`: the one under way or finished, or a newly started one.
    public func download(for url: ImageURL) -> Download {
        let (download, isNew) = state.withLock { state -> (Download, Bool) in
            if let existing = state.downloads[url.resourceKey], !isExpiredFailure(existing.phase) {
                state.counters.joined += 1
                return (existing, false)
            }
            let download = Download(url: url)
            state.downloads[url.resourceKey] = download
            state.counters.started += 1
            return (download, true)
        }
        if isNew { start(download) }
        return download
    }

    /// The download of `url` if one is under way, finished, or a remembered failure; never starts one.
    public func existingDownload(for url: ImageURL) -> Download? {
        state.withLock { state in
            guard let existing = state.downloads[url.resourceKey], !isExpiredFailure(existing.phase) else { return nil }
            return existing
        }
    }

    /// The URLs whose downloads are complete.
    public func completedURLs() -> [ImageURL] {
        state.withLock { state in state.downloads.values.filter { $0.phase == .complete }.map(\.url) }
    }

    /// A snapshot of the counters.
    public var counters: Counters { state.withLock { $0.counters } }

    // MARK: - Transfers

    private func start(_ download: Download) {
        logger.debug("fetch started", metadata: ["url": "\(download.url)"])
        _ = fetcher.start(download.url, observer: download)
        download.whenFinished { [weak self, logger] error in
            guard let error else { return }
            self?.state.withLock { $0.counters.failed += 1 }
            logger.warning("fetch failed: \(error)", metadata: ["url": "\(download.url)"])
        }
    }

    private func isExpiredFailure(_ phase: Download.Phase) -> Bool {
        guard case .failed(let error, let when) = phase else { return false }
        return ContinuousClock.now - when >= memory(for: error)
    }

    private func memory(for error: FetchError) -> Duration {
        switch error {
        case .httpStatus(404), .httpStatus(410), .unresolvable: failureMemory.permanent
        default: failureMemory.transient
        }
    }
}
