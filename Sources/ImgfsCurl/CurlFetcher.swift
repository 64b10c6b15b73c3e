import CCurl
import CCurlShims
import Foundation
import ImgfsCore
import ImgfsSystem
import Logging

/// Fetches images with one libcurl multi handle driven by one thread of its own.
///
/// Guarantees: at most `maxTransfers` transfers run at once and at most `maxTransfersPerHost` per host, the rest wait
/// FIFO (without blocking other hosts); connections are reused and HTTP/2 is used where offered; transient failures
/// are retried with exponential backoff and jitter (honouring Retry-After up to a bound) without the observer seeing
/// anything twice; a URL the address policy refuses is never requested; every started transfer completes exactly once,
/// with ``FetchError/cancelled`` when cancelled and ``FetchError/shutDown`` when shut down; callers never block.
public final class CurlFetcher: ImageFetching, @unchecked Sendable {
    private struct Inbox {
        var submitted: [CurlTransfer] = []
        var cancelled: [Int] = []
        var promoted: [(id: Int, priority: FetchPriority)] = []
        var stopping = false
        var nextID = 1
    }

    private let configuration: FetcherConfiguration
    private let logger: Logger
    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked(Inbox())
    private let stopped = DispatchSemaphore(value: 0)
    // Owned by the fetcher thread:
    private var queue: AdmissionQueue<CurlTransfer>
    private var active: [UnsafeMutableRawPointer: (transfer: CurlTransfer, host: String)] = [:]
    private var delayed: [(due: ContinuousClock.Instant, transfer: CurlTransfer)] = []

    public init(configuration: FetcherConfiguration, logger: Logger) {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        self.configuration = configuration
        self.logger = logger
        self.multi = curl_multi_init()
        self.queue = AdmissionQueue(
            maxActive: configuration.maxTransfers,
            maxPerHost: configuration.maxTransfersPerHost,
            hostLimit: ActivePolicy.transfersPerHost(hostKey:))
        if configuration.insecure {
            logger.warning("--insecure: TLS certificates and host names are NOT verified")
        }
        let thread = Thread { [self] in run() }
        thread.name = "imgfs-curl"
        thread.start()
    }

    public func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        if let refusal = configuration.addressPolicy.refusal(host: request.url.host)
            ?? ActivePolicy.profile(for: request.url.host).refusal
        {
            logger.warning("refused: \(refusal)", metadata: ["url": "\(request.url)"])
            observer.transferDidComplete(error: .refused(refusal))
            return CurlTransferHandle(fetcher: nil, id: 0)
        }
        let id = inbox.withLock { inbox in
            defer { inbox.nextID += 1 }
            return inbox.nextID
        }
        guard let transfer = CurlTransfer(id: id, request: request, observer: observer, configuration: configuration)
        else {
            observer.transferDidComplete(error: .transport("curl_easy_init failed"))
            return CurlTransferHandle(fetcher: nil, id: id)
        }
        let accepted = inbox.withLock { inbox in
            if !inbox.stopping { inbox.submitted.append(transfer) }
            return !inbox.stopping
        }
        if accepted { curl_multi_wakeup(multi) } else { transfer.complete(error: .shutDown) }
        return CurlTransferHandle(fetcher: self, id: id)
    }

    /// Cancels every transfer (``FetchError/shutDown``), stops the thread and waits for it. Later transfers complete
    /// the same way at once.
    public func shutdown() {
        let first = inbox.withLock { inbox in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        guard first else { return }
        curl_multi_wakeup(multi)
        stopped.wait()
    }

    fileprivate func cancel(_ id: Int) {
        inbox.withLock { $0.cancelled.append(id) }
        curl_multi_wakeup(multi)
    }

    fileprivate func promote(_ id: Int, to priority: FetchPriority) {
        inbox.withLock { $0.promoted.append((id, priority)) }
        curl_multi_wakeup(multi)
    }

    // MARK: - The fetcher thread

    private func run() {
        TerminationSignals.block()
        var stillRunning: Int32 = 0
        while true {
            let (submitted, cancelled, promoted, stopping) = inbox.withLock { inbox in
                defer { inbox.submitted.removeAll(); inbox.cancelled.removeAll(); inbox.promoted.removeAll() }
                return (inbox.submitted, inbox.cancelled, inbox.promoted, inbox.stopping)
            }
            if stopping { break }
            for transfer in submitted {
                let hold = transfer.request.holdSeconds
                if hold > 0 {
                    delayed.append((.now + .milliseconds(Int(hold * 1000)), transfer))
                } else {
                    queue.enqueue(transfer, host: transfer.url.hostKey, priority: transfer.request.priority)
                }
            }
            for (id, priority) in promoted { queue.promote(where: { $0.id == id }, to: priority) }
            cancelled.forEach(cancelNow)
            enqueueDueRetries()
            admitWaiting()
            curl_multi_perform(multi, &stillRunning)
            // Transfers admitted in place of finished ones start at the next perform: do not sleep before it.
            if collectFinished() { continue }
            curl_multi_poll(multi, nil, 0, pollTimeout(), nil)
        }
        tearDown()
        stopped.signal()
    }

    /// Adds the transfers the queue lets start now; returns whether there were any.
    @discardableResult
    private func admitWaiting() -> Bool {
        let admitted = queue.admit()
        for (transfer, host) in admitted {
            active[transfer.easy] = (transfer, host)
            curl_multi_add_handle(multi, transfer.easy)
        }
        return !admitted.isEmpty
    }

    /// Completes (or schedules retries of) the transfers curl has finished; returns whether new ones were admitted.
    private func collectFinished() -> Bool {
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        while imgfs_multi_next_done(multi, &easy, &code) != 0 {
            guard let easy, let (transfer, host) = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            queue.finished(host: host)
            if let delay = transfer.retryDelay(code), let retry = CurlTransfer(retrying: transfer) {
                logger.info(
                    """
                    retrying in \(String(format: "%.2f", delay)) s (attempt \(retry.attempt + 1) of \
                    \(configuration.retries + 1)): \(transfer.failureDescription(code))
                    """,
                    metadata: ["url": "\(transfer.url)"])
                delayed.append((.now + .milliseconds(Int(delay * 1000)), retry))
            } else {
                transfer.complete(code)
            }
        }
        return queue.waitingCount > 0 && admitWaiting()
    }

    private func enqueueDueRetries() {
        let now = ContinuousClock.now
        let due = delayed.filter { $0.due <= now }
        delayed.removeAll { $0.due <= now }
        for (_, transfer) in due {
            queue.enqueue(transfer, host: transfer.url.hostKey, priority: transfer.request.priority)
        }
    }

    /// Milliseconds to wait for activity: at most a second, less when a retry falls due sooner.
    private func pollTimeout() -> Int32 {
        guard let next = delayed.map(\.due).min() else { return 1000 }
        let wait = ContinuousClock.now.duration(to: next)
        return Int32(
            max(0, min(1000, wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)))
    }

    private func cancelNow(_ id: Int) {
        if let (easy, entry) = active.first(where: { $0.value.transfer.id == id }) {
            active[easy] = nil
            curl_multi_remove_handle(multi, easy)
            queue.finished(host: entry.host)
            entry.transfer.complete(error: .cancelled)
        } else if let waiting = queue.removeWaiting(where: { $0.id == id }) {
            waiting.complete(error: .cancelled)
        } else if let index = delayed.firstIndex(where: { $0.transfer.id == id }) {
            delayed.remove(at: index).transfer.complete(error: .cancelled)
        }
    }

    private func tearDown() {
        for (easy, entry) in active {
            curl_multi_remove_handle(multi, easy)
            entry.transfer.complete(error: .shutDown)
        }
        active.removeAll()
        queue.removeAllWaiting().forEach { $0.complete(error: .shutDown) }
        delayed.forEach { $0.transfer.complete(error: .shutDown) }
        delayed.removeAll()
        let late = inbox.withLock { inbox in
            defer { inbox.submitted.removeAll() }
            return inbox.submitted
        }
        late.forEach { $0.complete(error: .shutDown) }
        curl_multi_cleanup(multi)
    }
}

/// Cancels one transfer of a ``CurlFetcher``.
struct CurlTransferHandle: TransferHandle {
    weak var fetcher: CurlFetcher?
    let id: Int

    func cancel() { fetcher?.cancel(id) }

    func promote(to priority: FetchPriority) { fetcher?.promote(id, to: priority) }
}
