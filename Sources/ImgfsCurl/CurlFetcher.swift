import CCurl
import CCurlShims
import Foundation
import ImgfsCore
import Logging
import Synchronization

/// Fetches images with one libcurl multi handle driven by one thread of its own.
///
/// Guarantees: at most `maxTransfers` transfers run at once and at most `maxTransfersPerHost` per host, the rest wait
/// FIFO (without blocking other hosts); connections are reused and HTTP/2 is used where offered; every started
/// transfer completes exactly once, with ``FetchError/cancelled`` when cancelled or shut down; callers never block.
public final class CurlFetcher: ImageFetching, @unchecked Sendable {
    private struct Inbox {
        var submitted: [CurlTransfer] = []
        var cancelled: [ObjectIdentifier] = []
        var stopping = false
    }

    private let configuration: FetcherConfiguration
    private let logger: Logger
    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    private let stopped = DispatchSemaphore(value: 0)
    private let isRunning = Atomic<Bool>(false)
    // Owned by the fetcher thread:
    private var queue: AdmissionQueue<CurlTransfer>
    private var active: [UnsafeMutableRawPointer: (transfer: CurlTransfer, host: String)] = [:]

    public init(configuration: FetcherConfiguration, logger: Logger) {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        self.configuration = configuration
        self.logger = logger
        self.multi = curl_multi_init()
        self.queue = AdmissionQueue(maxActive: configuration.maxTransfers, maxPerHost: configuration.maxTransfersPerHost)
        let thread = Thread { [self] in run() }
        thread.name = "imgfs-curl"
        isRunning.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    public func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        guard let transfer = CurlTransfer(request: request, observer: observer, configuration: configuration) else {
            observer.transferDidComplete(error: .transport("curl_easy_init failed"))
            return CurlTransferHandle(fetcher: nil, id: ObjectIdentifier(observer))
        }
        let accepted = inbox.withLock { inbox in
            if !inbox.stopping { inbox.submitted.append(transfer) }
            return !inbox.stopping
        }
        if accepted { curl_multi_wakeup(multi) } else { transfer.complete(error: .cancelled) }
        return CurlTransferHandle(fetcher: self, id: ObjectIdentifier(transfer))
    }

    /// Cancels every transfer, stops the thread and waits for it. Later transfers complete as cancelled at once.
    public func shutdown() {
        let first = inbox.withLock { inbox in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        guard first else { return }
        curl_multi_wakeup(multi)
        stopped.wait()
    }

    fileprivate func cancel(_ id: ObjectIdentifier) {
        inbox.withLock { $0.cancelled.append(id) }
        curl_multi_wakeup(multi)
    }

    // MARK: - The fetcher thread

    private func run() {
        SignalMask.blockTerminationSignals()
        var stillRunning: Int32 = 0
        while true {
            let (submitted, cancelled, stopping) = inbox.withLock { inbox in
                defer { inbox.submitted.removeAll(); inbox.cancelled.removeAll() }
                return (inbox.submitted, inbox.cancelled, inbox.stopping)
            }
            if stopping { break }
            for transfer in submitted { queue.enqueue(transfer, host: transfer.url.hostKey) }
            cancelled.forEach(cancelNow)
            admitWaiting()
            curl_multi_perform(multi, &stillRunning)
            collectFinished()
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        tearDown()
        stopped.signal()
    }

    private func admitWaiting() {
        for (transfer, host) in queue.admit() {
            active[transfer.easy] = (transfer, host)
            curl_multi_add_handle(multi, transfer.easy)
        }
    }

    private func collectFinished() {
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        while imgfs_multi_next_done(multi, &easy, &code) != 0 {
            guard let easy, let (transfer, host) = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            queue.finished(host: host)
            transfer.complete(code)
        }
        if queue.waitingCount > 0 { admitWaiting() }
    }

    private func cancelNow(_ id: ObjectIdentifier) {
        if let (easy, entry) = active.first(where: { ObjectIdentifier($0.value.transfer) == id }) {
            active[easy] = nil
            curl_multi_remove_handle(multi, easy)
            queue.finished(host: entry.host)
            entry.transfer.complete(error: .cancelled)
        } else if let waiting = queue.removeWaiting(where: { ObjectIdentifier($0) == id }) {
            waiting.complete(error: .cancelled)
        }
    }

    private func tearDown() {
        for (easy, entry) in active {
            curl_multi_remove_handle(multi, easy)
            entry.transfer.complete(error: .cancelled)
        }
        active.removeAll()
        queue.removeAllWaiting().forEach { $0.complete(error: .cancelled) }
        let late = inbox.withLock { inbox in
            defer { inbox.submitted.removeAll() }
            return inbox.submitted
        }
        late.forEach { $0.complete(error: .cancelled) }
        curl_multi_cleanup(multi)
    }
}

/// Cancels one transfer of a ``CurlFetcher``.
struct CurlTransferHandle: TransferHandle {
    weak var fetcher: CurlFetcher?
    let id: ObjectIdentifier

    func cancel() { fetcher?.cancel(id) }
}
