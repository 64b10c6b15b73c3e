import CCurl
import CCurlShims
import Foundation
import ImgfsModel
import ImgfsSystem
import ImgfsWorkers
import Logging

/// One libcurl multi handle driven by one thread of its own: it runs the transfers its ``CurlFetcher`` admitted and
/// placed on it, and keeps their retry delays.
///
/// Guarantees: a placed transfer is either run here and reported back to the fetcher once when it ends (finished,
/// retried later, or cancelled) or, once the worker has stopped, completed with ``FetchError/shutDown``; transfers
/// placed before a cancellation of theirs are added before the cancellation is looked at; the fetcher's lock is
/// never taken while this worker's inbox lock is held. HTTP/2 connections multiplex up to the configured streams.
final class CurlWorker: @unchecked Sendable {
    private struct Inbox {
        var added: [(transfer: CurlTransfer, host: String)] = []
        var delayed: [(due: ContinuousClock.Instant, transfer: CurlTransfer)] = []
        var cancelled: [Int] = []
        /// Cancelled while waiting for admission: completed here, so the caller of `cancel` never is called back.
        var cancelledWaiting: [CurlTransfer] = []
        var stopping = false
        var closed = false
    }

    let index: Int
    private unowned let fetcher: CurlFetcher
    private let configuration: FetcherConfiguration
    private let logger: Logger
    private let multi: UnsafeMutableRawPointer
    private let inbox = Locked(Inbox())
    private var thread: WorkerThread?
    // Owned by the worker thread:
    private var active: [UnsafeMutableRawPointer: (transfer: CurlTransfer, host: String)] = [:]
    private var delayed: [(due: ContinuousClock.Instant, transfer: CurlTransfer)] = []
    /// When worker 0 next asks the fetcher to review admission (twice a second).
    private var nextReview = ContinuousClock.now

    init(index: Int, fetcher: CurlFetcher, configuration: FetcherConfiguration, logger: Logger) {
        self.index = index
        self.fetcher = fetcher
        self.configuration = configuration
        self.logger = logger
        self.multi = curl_multi_init()
        imgfs_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        imgfs_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.streamsPerConnection))
        // curl's default keeps four idle connections per transfer running: when few run for a moment (readers that
        // pause, a thread given fewer), it closed connections the next transfers then opened again, a round trip
        // each (37–51 new connections per 10,000 icons with 16 per host, where 16 suffice). Every transfer may come
        // to this thread: room for twice the most that run at once.
        imgfs_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 2 * max(1, configuration.maxTransfers))
    }

    /// Starts the thread, named `imgfs-curl-N` (as `ps -L`, `top -H` and perf show it).
    func start() throws(SystemCallError) {
        thread = try WorkerThread(name: "imgfs-curl-\(index)") { [self] in run() }
    }

    // MARK: - Called by the fetcher (any thread)

    /// Takes an admitted transfer to run; false once the worker has stopped.
    func place(_ transfer: CurlTransfer, host: String) -> Bool {
        inbox.withLock { inbox in
            if !inbox.closed { inbox.added.append((transfer, host)) }
            return !inbox.closed
        }
    }

    /// Keeps `transfer` until `due`, then hands it back to the fetcher's queue; false once the worker has stopped.
    func delay(_ transfer: CurlTransfer, until due: ContinuousClock.Instant) -> Bool {
        inbox.withLock { inbox in
            if !inbox.closed { inbox.delayed.append((due, transfer)) }
            return !inbox.closed
        }
    }

    func cancel(_ id: Int) {
        inbox.withLock { $0.cancelled.append(id) }
    }

    /// Completes `transfer`, cancelled before it was admitted, with ``FetchError/cancelled`` on this thread; false
    /// once the worker has stopped.
    func completeCancelled(_ transfer: CurlTransfer) -> Bool {
        inbox.withLock { inbox in
            if !inbox.closed { inbox.cancelledWaiting.append(transfer) }
            return !inbox.closed
        }
    }

    func wake() { curl_multi_wakeup(multi) }

    /// Completes everything placed here with ``FetchError/shutDown`` and waits for the thread to end.
    func stop() {
        inbox.withLock { $0.stopping = true }
        wake()
        thread?.join()
    }

    // MARK: - The worker thread

    private func run() {
        var stillRunning: Int32 = 0
        while true {
            let (added, newlyDelayed, cancelled, cancelledWaiting, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.added.removeAll()
                    inbox.delayed.removeAll()
                    inbox.cancelled.removeAll()
                    inbox.cancelledWaiting.removeAll()
                }
                return (inbox.added, inbox.delayed, inbox.cancelled, inbox.cancelledWaiting, inbox.stopping)
            }
            cancelledWaiting.forEach { $0.complete(error: .cancelled) }
            if stopping { break }
            for (transfer, host) in added {
                transfer.onResponse = { [unowned fetcher] version in fetcher.learned(httpVersion: version, host: host) }
                active[transfer.easy] = (transfer, host)
                curl_multi_add_handle(multi, transfer.easy)
            }
            delayed += newlyDelayed
            cancelled.forEach(cancelNow)
            requeueDue()
            if index == 0, ContinuousClock.now >= nextReview {
                nextReview = .now + .milliseconds(500)
                fetcher.review()
            }
            curl_multi_perform(multi, &stillRunning)
            // Transfers admitted in place of finished ones start at the next perform: do not sleep before it.
            if collectFinished() { continue }
            curl_multi_poll(multi, nil, 0, pollTimeout(), nil)
        }
        tearDown()
    }

    /// Reports the transfers curl has finished to the fetcher and completes them or keeps their retries; returns
    /// whether there were any.
    private func collectFinished() -> Bool {
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        var ended: [CurlFetcher.Ended] = []
        var completions: [(CurlTransfer, CURLcode)] = []
        while imgfs_multi_next_done(multi, &easy, &code) != 0 {
            guard let easy, let (transfer, host) = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            let retry = transfer.retryDelay(code).flatMap { delay in
                CurlTransfer(retrying: transfer).map { (delay, $0) }
            }
            ended.append(.init(id: transfer.id, host: host, staysHere: retry != nil))
            if let (delay, retry) = retry {
                logger.info(
                    """
                    retrying in \(String(format: "%.2f", delay)) s (attempt \(retry.attempt + 1) of \
                    \(configuration.retries + 1)): \(transfer.failureDescription(code))
                    """,
                    metadata: ["url": "\(transfer.url)"])
                delayed.append((.now + .milliseconds(Int(saturating: delay * 1000)), retry))
            } else {
                completions.append((transfer, code))
            }
        }
        guard !ended.isEmpty else { return false }
        fetcher.ended(ended, on: self, looksAgain: true)
        for (transfer, code) in completions { transfer.complete(code) }
        return true
    }

    private func requeueDue() {
        guard !delayed.isEmpty else { return }
        let now = ContinuousClock.now
        let due = delayed.filter { $0.due <= now }.map(\.transfer)
        guard !due.isEmpty else { return }
        delayed.removeAll { $0.due <= now }
        fetcher.requeue(due, from: self)
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
            fetcher.ended(
                [.init(id: id, host: entry.host, staysHere: false)], on: self, looksAgain: false)
            entry.transfer.complete(error: .cancelled)
        } else if let index = delayed.firstIndex(where: { $0.transfer.id == id }) {
            fetcher.forget(id)
            delayed.remove(at: index).transfer.complete(error: .cancelled)
        }
    }

    private func tearDown() {
        let (late, lateDelayed, cancelledWaiting) = inbox.withLock { inbox in
            inbox.closed = true
            return (inbox.added.map(\.transfer), inbox.delayed.map(\.transfer), inbox.cancelledWaiting)
        }
        cancelledWaiting.forEach { $0.complete(error: .cancelled) }
        for (easy, entry) in active {
            curl_multi_remove_handle(multi, easy)
            entry.transfer.complete(error: .shutDown)
        }
        active.removeAll()
        (delayed.map(\.transfer) + late + lateDelayed).forEach { $0.complete(error: .shutDown) }
        delayed.removeAll()
        curl_multi_cleanup(multi)
    }
}
