import CCurl
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsSystem
import Logging

/// Fetches images with several libcurl multi handles, each driven by a thread of its own (``CurlWorker``), behind one
/// admission queue.
///
/// Guarantees: at most `maxTransfers` transfers run at once over all threads and at most the host's limit per host
/// (`maxTransfersPerHost`, or the policy's; on a host that answered over HTTP/2 that many connections, each carrying
/// up to `streamsPerConnection` transfers), the rest wait by priority class and FIFO within one (without blocking
/// other hosts): every admission is decided once, under one lock, and the admitted transfer is then placed on the
/// thread with the fewest transfers of its host (then the fewest in all); transient failures are retried with
/// exponential backoff and jitter (honouring Retry-After up to a bound) without the observer seeing anything twice; a
/// URL the address policy refuses is never requested; every started transfer completes exactly once, with
/// ``FetchError/cancelled`` when cancelled and ``FetchError/shutDown`` when shut down; callers never block. While a
/// transfer someone waits for waits for a place, a running transfer nobody wants any more
/// (``TransferObserving/isWanted``, false at two looks half a second apart) is called off to make room.
public final class CurlFetcher: ImageFetching, @unchecked Sendable {
    /// How an admitted transfer left its thread.
    struct Ended {
        let id: Int
        let host: String
        /// It waits on the same thread for a retry.
        let staysHere: Bool
    }

    private struct State {
        var queue: AdmissionQueue<CurlTransfer>
        /// The thread each admitted or delayed transfer is on, by transfer id.
        var placement: [Int: Int] = [:]
        /// The admitted transfers, by id (to ask whether they are still wanted).
        var admitted: [Int: CurlTransfer] = [:]
        /// The running transfers nobody wanted at the last review.
        var unwanted: Set<Int> = []
        /// Admitted transfers on each thread, in all and per host.
        var load: [Int]
        var hostLoad: [[String: Int]]
        var stopping = false
        var nextID = 1
    }

    private let configuration: FetcherConfiguration
    private let logger: Logger
    private let state: Locked<State>
    private var workers: [CurlWorker] = []

    /// Initialises libcurl and starts the fetcher's worker threads; they run until the process ends.
    public init(configuration: FetcherConfiguration, logger: Logger) {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        self.configuration = configuration
        self.logger = logger
        let threads = max(1, configuration.fetchThreads)
        let queue = AdmissionQueue<CurlTransfer>(
            maxActive: configuration.maxTransfers,
            maxPerHost: configuration.maxTransfersPerHost,
            hostLimit: { $0.request.rules.transfersPerHost(host: $0.url.host) })
        let idle = State(
            queue: queue, load: Array(repeating: 0, count: threads), hostLoad: Array(repeating: [:], count: threads))
        self.state = Locked(idle)
        if configuration.insecure {
            logger.warning("--insecure: TLS certificates and host names are NOT verified")
        }
        workers = (0..<threads).map {
            CurlWorker(index: $0, fetcher: self, configuration: configuration, logger: logger)
        }
        for worker in workers {
            do { try worker.start() } catch { fatalError("imgfs: cannot start a fetch thread: \(error)") }
        }
    }

    /// Queues the GET for admission and returns its handle at once; `observer` hears the transfer's events from a
    /// worker thread. A refused host (address policy or request rules) completes it at once with
    /// ``FetchError/refused(_:)``.
    public func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        if let refusal = configuration.addressPolicy.refusal(host: request.url.host)
            ?? request.rules.profile(for: request.url.host).refusal
        {
            logger.warning("refused: \(refusal)", metadata: ["url": "\(request.url)"])
            observer.transferDidComplete(error: .refused(refusal))
            return CurlTransferHandle(fetcher: nil, id: 0)
        }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        guard
            let transfer = CurlTransfer(
                id: id, request: request, observer: observer, configuration: configuration,
                deliveredHead: request.continuedHead,
                delivered: request.continuedHead == nil ? 0 : request.continuedFrom)
        else {
            observer.transferDidComplete(error: .transport("curl_easy_init failed"))
            return CurlTransferHandle(fetcher: nil, id: id)
        }
        let hold = request.holdSeconds
        let (woken, refused) = state.withLock { state -> ([Int], [CurlTransfer]) in
            guard !state.stopping else { return ([], [transfer]) }
            guard hold <= 0 else {
                let index = state.load.indices.min { state.load[$0] < state.load[$1] } ?? 0
                guard workers[index].delay(transfer, until: .now + .milliseconds(Int(saturating: hold * 1000))) else {
                    return ([], [transfer])
                }
                state.placement[id] = index
                return ([index], [])
            }
            state.queue.enqueue(transfer, host: transfer.url.hostKey, priority: request.priority)
            return admit(&state)
        }
        finish(woken: woken, refused: refused, except: nil)
        return CurlTransferHandle(fetcher: self, id: id)
    }

    /// Cancels every transfer (``FetchError/shutDown``), stops the threads and waits for them. Later transfers
    /// complete the same way at once.
    public func shutdown() {
        let first = state.withLock { state in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        workers.forEach { $0.stop() }
        state.withLock { $0.queue.removeAllWaiting() }.forEach { $0.complete(error: .shutDown) }
    }

    fileprivate func cancel(_ id: Int) {
        let (worker, stopped) = state.withLock { state -> (CurlWorker?, CurlTransfer?) in
            if let waiting = state.queue.removeWaiting(where: { $0.id == id }) {
                // Completed on a fetch thread, as every other completion: never inside the caller's `cancel`.
                return workers[0].completeCancelled(waiting) ? (workers[0], nil) : (nil, waiting)
            }
            guard let index = state.placement[id] else { return (nil, nil) }
            workers[index].cancel(id)
            return (workers[index], nil)
        }
        worker?.wake()
        stopped?.complete(error: .cancelled)  // the threads have stopped: nothing else will complete it
    }

    fileprivate func promote(_ id: Int, to priority: FetchPriority) {
        state.withLock { _ = $0.queue.promote(where: { $0.id == id }, to: priority) }
    }

    // MARK: - Called by the workers

    /// Transfers have left `worker` (finished, cancelled, or waiting there for a retry): their places are free again
    /// and the queue admits what may start now. `looksAgain`: the worker reads its inbox before it next waits, so it
    /// needs no wake-up.
    func ended(_ ended: [Ended], on worker: CurlWorker, looksAgain: Bool) {
        let (woken, refused) = state.withLock { state -> ([Int], [CurlTransfer]) in
            for transfer in ended {
                state.queue.finished(host: transfer.host)
                state.load[worker.index] -= 1
                let left = state.hostLoad[worker.index][transfer.host, default: 1] - 1
                state.hostLoad[worker.index][transfer.host] = left > 0 ? left : nil
                if !transfer.staysHere { state.placement[transfer.id] = nil }
                state.admitted[transfer.id] = nil
            }
            return admit(&state)
        }
        finish(woken: woken, refused: refused, except: looksAgain ? worker.index : nil)
    }

    /// A response from `host` came over `httpVersion` (CURLINFO_HTTP_VERSION): an HTTP/2 host is from now on admitted
    /// `streamsPerConnection` transfers per connection of its limit, an HTTP/1.x host one.
    func learned(httpVersion: Int, host: String) {
        let multiplexed = httpVersion >= Int(CURL_HTTP_VERSION_2_0)
        let streams = multiplexed ? configuration.streamsPerConnection : 1
        let (changed, limit, woken, refused) = state.withLock { state -> (Bool, Int, [Int], [CurlTransfer]) in
            guard state.queue.setStreamsPerConnection(streams, host: host) else { return (false, 0, [], []) }
            let (woken, refused) = admit(&state)
            return (true, state.queue.limit(of: host), woken, refused)
        }
        guard changed else { return }
        finish(woken: woken, refused: refused, except: nil)
        logger.debug("\(host) answers over \(multiplexed ? "HTTP/2" : "HTTP/1.x"): up to \(limit) transfers at once")
    }

    /// Delayed transfers (retries, held requests) fall due on `worker`: they wait in the queue again.
    func requeue(_ transfers: [CurlTransfer], from worker: CurlWorker) {
        let (woken, refused) = state.withLock { state -> ([Int], [CurlTransfer]) in
            transfers.forEach { state.placement[$0.id] = nil }
            guard !state.stopping else { return ([], transfers) }
            for transfer in transfers {
                state.queue.enqueue(transfer, host: transfer.url.hostKey, priority: transfer.request.priority)
            }
            return admit(&state)
        }
        finish(woken: woken, refused: refused, except: nil)
    }

    /// A delayed transfer was cancelled on its thread.
    func forget(_ id: Int) {
        state.withLock { _ = $0.placement.removeValue(forKey: id) }
    }

    /// Called by a worker twice a second: admits transfers that waited long enough to use the reserve for idle hosts,
    /// and, while a transfer someone waits for waits for a place, calls off the running transfers nobody wanted at
    /// this review and the one before.
    func review(now: ContinuousClock.Instant = .now) {
        let (candidates, woken, refused) = state.withLock { state -> ([CurlTransfer], [Int], [CurlTransfer]) in
            let (woken, refused) = admit(&state, now: now)
            guard state.queue.hasWaitedItems else {
                state.unwanted = []
                return ([], woken, refused)
            }
            return (Array(state.admitted.values), woken, refused)
        }
        finish(woken: woken, refused: refused, except: nil)
        guard !candidates.isEmpty else { return }
        // Asked outside the lock: an observer takes locks of its own.
        let unwanted = Set(candidates.filter { !$0.observer.isWanted }.map(\.id))
        let callOff = state.withLock { state in
            defer { state.unwanted = unwanted }
            return candidates.filter { unwanted.contains($0.id) && state.unwanted.contains($0.id) }
        }
        for transfer in callOff {
            logger.info(
                "transfer called off: nobody waits for it, and a transfer someone waits for needs its place",
                metadata: ["url": "\(transfer.url)"])
            cancel(transfer.id)
        }
    }

    // MARK: - Admission

    /// Admits what may start and places each on the thread with the fewest transfers of its host, then the fewest
    /// in all; returns the threads to wake and the transfers no thread took (shut down).
    private func admit(
        _ state: inout State, now: ContinuousClock.Instant = .now
    ) -> (woken: [Int], refused: [CurlTransfer]) {
        guard !state.stopping else { return ([], []) }
        var woken: [Int] = []
        var refused: [CurlTransfer] = []
        for (transfer, host) in state.queue.admit(now: now) {
            let index = state.load.indices.min { busyness(state, $0, host) < busyness(state, $1, host) } ?? 0
            guard workers[index].place(transfer, host: host) else {
                state.queue.finished(host: host)
                refused.append(transfer)
                continue
            }
            state.load[index] += 1
            state.hostLoad[index][host, default: 0] += 1
            state.placement[transfer.id] = index
            state.admitted[transfer.id] = transfer
            if !woken.contains(index) { woken.append(index) }
        }
        return (woken, refused)
    }

    /// How busy thread `index` is for a transfer of `host`: its transfers of that host, then all of its transfers.
    private func busyness(_ state: State, _ index: Int, _ host: String) -> (Int, Int) {
        (state.hostLoad[index][host, default: 0], state.load[index])
    }

    /// Outside the lock: wakes the threads that were given transfers (but `except`, the caller's own, which is
    /// about to look) and completes the refused ones.
    private func finish(woken: [Int], refused: [CurlTransfer], except: Int?) {
        for index in woken where index != except { workers[index].wake() }
        refused.forEach { $0.complete(error: .shutDown) }
    }
}

/// Cancels one transfer of a ``CurlFetcher``.
struct CurlTransferHandle: TransferHandle {
    weak var fetcher: CurlFetcher?
    let id: Int

    func cancel() { fetcher?.cancel(id) }

    func promote(to priority: FetchPriority) { fetcher?.promote(id, to: priority) }
}
