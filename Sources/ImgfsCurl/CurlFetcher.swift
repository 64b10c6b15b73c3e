import CCurl
import CCurlShims
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsSystem
import ImgfsWorkers
import Logging
import Synchronization

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
/// (``TransferObserving/isWanted``, false at two looks half a second apart) is called off to make room. A lookup's
/// probe (``FetchRequest/pausesAtProbe``) paused after its first bytes goes on as soon as its observer wants the rest
/// (``TransferHandle/restWanted()``) and otherwise ends there as a probe after `probeGrace` seconds, at once when it is
/// called off, or after `crowdedProbeHold` seconds when a transfer someone waits for waits for a place.
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
            var (woken, refused) = admit(&state)
            if state.queue.hasWaitedItems {
                // A transfer someone waits for waits for a place: threads holding paused lookups' probes end them.
                woken += workers.indices.filter { !woken.contains($0) && workers[$0].hasPaused }
            }
            return (woken, refused)
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

    /// Wakes the thread transfer `id` runs on when a transfer is paused there: it looks whether its paused transfers
    /// are wanted now. (An open of every image read after its lookup lands here: a thread with nothing paused is not
    /// woken. One that pauses a transfer after this looked looks again itself before it waits.)
    fileprivate func restWanted(_ id: Int) {
        guard let index = state.withLock({ $0.placement[id] }), workers[index].hasPaused else { return }
        workers[index].wake()
    }

    /// Whether a transfer someone waits for waits for a place (a paused lookup's probe then gives its place up).
    func waitedTransfersWait() -> Bool {
        state.withLock { $0.queue.hasWaitedItems }
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

    func restWanted() { fetcher?.restWanted(id) }
}

// MARK: - CurlWorker

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
    /// Lookups' probes paused after their first bytes, with when they may give their place up to a waited transfer
    /// and when their grace time ends.
    private var paused: [UnsafeMutableRawPointer: (held: ContinuousClock.Instant, ends: ContinuousClock.Instant)] = [:]
    /// Whether any transfer is paused here (read by the fetcher on other threads).
    private let pausedCount = Atomic<Int>(0)
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

    /// Whether a lookup's probe is paused on this thread now.
    var hasPaused: Bool { pausedCount.load(ordering: .sequentiallyConsistent) > 0 }

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
                transfer.onPause = { [unowned self, easy = transfer.easy] in
                    paused[easy] = (
                        .now + .milliseconds(Int(saturating: configuration.crowdedProbeHold * 1000)),
                        .now + .milliseconds(Int(saturating: configuration.probeGrace * 1000))
                    )
                    pausedCount.store(paused.count, ordering: .sequentiallyConsistent)
                }
                active[transfer.easy] = (transfer, host)
                curl_multi_add_handle(multi, transfer.easy)
            }
            delayed += newlyDelayed
            cancelled.forEach(cancelNow)
            reviewPaused()
            requeueDue()
            if index == 0, ContinuousClock.now >= nextReview {
                nextReview = .now + .milliseconds(500)
                fetcher.review()
            }
            curl_multi_perform(multi, &stillRunning)
            // Transfers admitted in place of finished ones start at the next perform: do not sleep before it.
            if collectFinished() { continue }
            // A probe paused in this perform whose rest was wanted meanwhile goes on now (its opener may have looked
            // before the pause was counted, and not woken this thread).
            reviewPaused()
            curl_multi_poll(multi, nil, 0, pollTimeout(), nil)
        }
        tearDown()
    }

    /// Resumes the paused lookups' probes whose rest is wanted now, and ends as probes those whose grace time has
    /// passed (and those held long enough while a transfer someone waits for waits for a place).
    private func reviewPaused() {
        guard !paused.isEmpty else { return }
        let now = ContinuousClock.now
        let crowded = fetcher.waitedTransfersWait()
        for (easy, times) in paused {
            guard let (transfer, _) = active[easy] else {
                paused[easy] = nil
                continue
            }
            if transfer.observer.wantsRest {
                paused[easy] = nil
                transfer.resume()
            } else if (crowded && now >= times.held) || now >= times.ends {
                endPaused(easy)
            }
        }
        pausedCount.store(paused.count, ordering: .sequentiallyConsistent)
    }

    /// Ends the paused lookup's probe of `easy` where it stopped: its place is free, its observer keeps the bytes.
    private func endPaused(_ easy: UnsafeMutableRawPointer) {
        paused[easy] = nil
        pausedCount.store(paused.count, ordering: .sequentiallyConsistent)
        guard let (transfer, host) = active.removeValue(forKey: easy) else { return }
        curl_multi_remove_handle(multi, easy)
        fetcher.ended([.init(id: transfer.id, host: host, staysHere: false)], on: self, looksAgain: false)
        transfer.endAtProbe()
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
            if paused.removeValue(forKey: easy) != nil {
                pausedCount.store(paused.count, ordering: .sequentiallyConsistent)
            }
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

    /// Milliseconds to wait for activity: at most a second, less when a retry or a paused probe's end falls due sooner.
    private func pollTimeout() -> Int32 {
        let now = ContinuousClock.now
        let pausedDue = paused.values.map { $0.held > now ? $0.held : $0.ends }
        guard let next = (delayed.map(\.due) + pausedDue).min() else { return 1000 }
        let wait = now.duration(to: next)
        return Int32(
            max(0, min(1000, wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)))
    }

    private func cancelNow(_ id: Int) {
        if let (easy, _) = active.first(where: { $0.value.transfer.id == id }), paused[easy] != nil {
            endPaused(easy)  // called off while paused after its first bytes: it ends as a probe, keeping them
        } else if let (easy, entry) = active.first(where: { $0.value.transfer.id == id }) {
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
        paused.removeAll()
        (delayed.map(\.transfer) + late + lateDelayed).forEach { $0.complete(error: .shutDown) }
        delayed.removeAll()
        curl_multi_cleanup(multi)
    }
}

// MARK: - AdmissionQueue

/// Waiting transfers, admitted by priority class and first-come first-served within a class, within a limit of
/// simultaneous transfers in total and per host.
///
/// Guarantees: an item is admitted only while fewer than `maxActive` are active and fewer than its host's limit
/// (`maxPerHost`, or the host's own from `hostLimit`, asked of each item of the host as it is queued) of its host
/// are; among the items that may start, one of the most urgent class starts first, and within a class the oldest;
/// a host at its limit never holds back items of other hosts (no head-of-line blocking across hosts); a promoted item
/// keeps its age in its new class. A host known to multiplex (HTTP/2) is admitted its limit times its streams per
/// connection. Fair across hosts: an item someone waits for (``FetchPriority/waited``) whose host has nothing active
/// and that has waited `starvation` or longer starts even when `maxActive` are active, up to `reserve` such items
/// beyond it, so hosts that hold every place (slow ones) keep another host's reader out for seconds at most. Not
/// thread safe: one owner drives it.
public struct AdmissionQueue<Item> {
    private struct Key: Hashable {
        let host: String
        let priority: FetchPriority
    }

    private struct Waiting {
        let sequence: Int
        let item: Item
        let since: ContinuousClock.Instant
    }

    /// One host's waiting items; `head` indexes the oldest, so taking it costs no copy.
    private struct HostQueue {
        var items: [Waiting] = []
        var head = 0
        var oldest: Waiting? { head < items.count ? items[head] : nil }

        mutating func takeOldest() -> Waiting {
            defer {
                head += 1
                if head > 64 && head * 2 > items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }

    /// How many items may run at once.
    public let maxActive: Int
    /// How many items for one host may run at once.
    public let maxPerHost: Int
    /// How many starved items may run beyond `maxActive`.
    public let reserve: Int
    /// How long a waited item of an idle host waits before it may use the reserve.
    public let starvation: Duration
    private var waitingByHost: [Key: HostQueue] = [:]
    private var activeByHost: [String: Int] = [:]
    /// Each host's limit, as `hostLimit` said of its last item queued.
    private var limitByHost: [String: Int] = [:]
    /// Transfers each connection of a host carries at once, for hosts known to multiplex (absent: 1).
    private var streamsByHost: [String: Int] = [:]
    /// A limit of an item's host's own (a policy rule's, in the rules the item was made under), or nil for
    /// `maxPerHost`.
    private let hostLimit: (Item) -> Int?
    private var nextSequence = 0
    /// How many admitted items have not finished.
    public private(set) var activeCount = 0
    /// How many items wait.
    public private(set) var waitingCount = 0

    /// An empty queue (limits below 1 count as 1): an item that has waited longer than `starvation` is starved, and
    /// `hostLimit` gives an item's own limit for its host when its rules set one.
    public init(
        maxActive: Int, maxPerHost: Int, starvation: Duration = .seconds(2),
        hostLimit: @escaping (Item) -> Int? = { _ in nil }
    ) {
        self.maxActive = max(1, maxActive)
        self.maxPerHost = max(1, maxPerHost)
        self.reserve = max(1, self.maxActive / 4)
        self.starvation = starvation
        self.hostLimit = hostLimit
    }

    /// Adds `item`, for `host`, to the end of its class.
    public mutating func enqueue(
        _ item: Item, host: String, priority: FetchPriority = .waited, now: ContinuousClock.Instant = .now
    ) {
        limitByHost[host] = max(1, hostLimit(item) ?? maxPerHost)
        waitingByHost[Key(host: host, priority: priority), default: HostQueue()].items
            .append(Waiting(sequence: nextSequence, item: item, since: now))
        nextSequence += 1
        waitingCount += 1
    }

    /// Takes the items that may start now, oldest first, and counts them as active (see the type's guarantees for
    /// the starved items that may start beyond `maxActive`).
    public mutating func admit(now: ContinuousClock.Instant = .now) -> [(item: Item, host: String)] {
        var admitted: [(item: Item, host: String)] = []
        while activeCount < maxActive, let key = next(where: { _, _ in true }) {
            admitted.append(take(key))
        }
        let starvedSince = now - starvation
        while activeCount >= maxActive, activeCount < maxActive + reserve,
            let key = next(where: { key, oldest in
                key.priority == .waited && activeByHost[key.host] == nil && oldest.since <= starvedSince
            })
        {
            admitted.append(take(key))
        }
        return admitted
    }

    /// The queue whose oldest item starts next among those `eligible` (and under their host's limit).
    private func next(where eligible: (Key, Waiting) -> Bool) -> Key? {
        var best: (key: Key, rank: (Int, Int))?
        for (key, queue) in waitingByHost where activeByHost[key.host, default: 0] < limit(of: key.host) {
            guard let oldest = queue.oldest, eligible(key, oldest) else { continue }
            let rank = (key.priority.rawValue, oldest.sequence)
            if best.map({ rank < $0.rank }) ?? true { best = (key, rank) }
        }
        return best?.key
    }

    private mutating func take(_ key: Key) -> (item: Item, host: String) {
        let item = waitingByHost[key]!.takeOldest().item
        if waitingByHost[key]?.oldest == nil { waitingByHost[key] = nil }
        activeByHost[key.host, default: 0] += 1
        activeCount += 1
        waitingCount -= 1
        return (item, key.host)
    }

    /// Whether an item someone waits for (``FetchPriority/waited``) is waiting for a place.
    public var hasWaitedItems: Bool {
        waitingByHost.keys.contains { $0.priority == .waited }
    }

    /// How many items of `host` may be active at once: its limit, times its streams per connection when it multiplexes.
    public func limit(of host: String) -> Int {
        limitByHost[host, default: maxPerHost] * streamsByHost[host, default: 1]
    }

    /// Records that each connection to `host` carries `streams` transfers at once (HTTP/2), or 1 (HTTP/1.1); the
    /// host's limit then bounds its connections. Returns whether that changed.
    @discardableResult
    public mutating func setStreamsPerConnection(_ streams: Int, host: String) -> Bool {
        let streams = max(1, streams)
        guard streamsByHost[host, default: 1] != streams else { return false }
        streamsByHost[host] = streams == 1 ? nil : streams
        return true
    }

    /// An admitted item of `host` has finished.
    public mutating func finished(host: String) {
        guard let count = activeByHost[host], count > 0 else { return }
        activeByHost[host] = count == 1 ? nil : count - 1
        activeCount -= 1
    }

    /// Removes the first waiting item that `matches`, if any.
    public mutating func removeWaiting(where matches: (Item) -> Bool) -> Item? {
        take(where: matches)?.waiting.item
    }

    /// Moves the waiting item that `matches` up to `priority` when it waits in a less urgent class, keeping its age;
    /// returns whether it moved.
    @discardableResult
    public mutating func promote(where matches: (Item) -> Bool, to priority: FetchPriority) -> Bool {
        guard let (key, waiting) = take(where: matches) else { return false }
        let target = Key(host: key.host, priority: min(priority, key.priority))
        var queue = waitingByHost[target] ?? HostQueue()
        let index = queue.items[queue.head...].firstIndex { $0.sequence > waiting.sequence } ?? queue.items.endIndex
        queue.items.insert(waiting, at: index)
        waitingByHost[target] = queue
        waitingCount += 1
        return target != key
    }

    private mutating func take(where matches: (Item) -> Bool) -> (key: Key, waiting: Waiting)? {
        for (key, queue) in waitingByHost {
            guard let index = queue.items[queue.head...].firstIndex(where: { matches($0.item) }) else { continue }
            var rest = queue
            let removed = rest.items.remove(at: index)
            waitingByHost[key] = rest.oldest == nil ? nil : rest
            waitingCount -= 1
            return (key, removed)
        }
        return nil
    }

    /// Removes and returns every waiting item.
    public mutating func removeAllWaiting() -> [Item] {
        let all = waitingByHost.values.flatMap { $0.items[$0.head...] }.sorted { $0.sequence < $1.sequence }.map(\.item)
        waitingByHost = [:]
        waitingCount = 0
        return all
    }
}
