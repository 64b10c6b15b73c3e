import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The shared engine behind `TestOrigin`: listener, routes, records and the
/// registry of connection threads.
///
/// Threads reference this object, never the public `TestOrigin`, so dropping the
/// last `TestOrigin` reference runs its `deinit`, which stops everything here.
final class OriginCore: Sendable {
    typealias Handler = @Sendable (RecordedRequest) -> OriginResponse

    /// Everything mutable, guarded by one mutex.
    struct State: Sendable {
        var stopping = false
        var acceptThread: JoinableThread?
        var exactRoutes: [String: OriginResponse] = [:]
        var prefixRoutes: [(prefix: String, handler: Handler)] = []
        var requests: [RecordedRequest] = []
        var requestCounts: [String: Int] = [:]
        var bodyBytes: [String: Int] = [:]
        var connectionCount = 0
        var nextConnectionID = 0
        var openSockets: [Int: Int32] = [:]
        var connectionThreads: [Int: JoinableThread] = [:]
    }

    let listenFD: Int32
    let port: UInt16
    let state = Mutex(State())
    /// Mirror of `State.stopping` that sleeping connection threads poll cheaply.
    private let stopFlag = Atomic<Bool>(false)
    /// Serialises `stop()` so a second caller returns only once everything is down.
    private let stopGate = Mutex<Bool>(false)

    static let connectionStackSize = 512 * 1024

    init(host: String, port: UInt16, backlog: Int32) throws {
        listenFD = try SocketIO.listen(host: host, port: port, backlog: backlog)
        do {
            self.port = try SocketIO.localPort(listenFD)
        } catch {
            _ = close(listenFD)
            throw error
        }
    }

    // MARK: - Accepting

    /// Starts the accept thread; called once, right after `init`.
    func startAccepting() throws {
        let thread = try JoinableThread.start(name: "origin-accept", stackSize: 256 * 1024) { [self] in
            acceptLoop()
        }
        state.withLock { $0.acceptThread = thread }
    }

    private func acceptLoop() {
        while true {
            let fd = SocketIO.acceptConnection(listenFD)
            if fd >= 0 {
                startConnection(fd)
                continue
            }
            let error = errno
            if isStopping { return }
            switch error {
            case EINTR, ECONNABORTED, EPROTO:
                continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                _ = delay(until: MonotonicClock.now() + 0.01)  // out of descriptors or memory: back off a moment
            default:
                return
            }
        }
    }

    /// Registers the socket and starts its thread while holding the lock, so the
    /// thread is always registered before it can try to unregister itself.
    private func startConnection(_ fd: Int32) {
        try? SocketIO.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1, name: "setsockopt(TCP_NODELAY)")
        state.withLock { state in
            guard !state.stopping else {
                _ = close(fd)
                return
            }
            state.nextConnectionID += 1
            state.connectionCount += 1
            let id = state.nextConnectionID
            state.openSockets[id] = fd
            do {
                state.connectionThreads[id] = try JoinableThread.start(
                    name: "origin-conn", stackSize: OriginCore.connectionStackSize
                ) { [self] in
                    var connection = OriginConnection(core: self, fd: fd, id: id)
                    connection.serve()
                }
            } catch {
                state.openSockets[id] = nil
                _ = close(fd)
            }
        }
    }

    /// Called by a connection thread as its very last action: closes the socket
    /// (FIN after draining, or RST) and unregisters it. While the origin is running
    /// the thread detaches itself; during `stop()` it stays registered to be joined.
    func finishConnection(id: Int, fd: Int32, reset: Bool) {
        if reset {
            SocketIO.armReset(fd)
        } else {
            SocketIO.finishWriting(fd, timeout: 2) { isStopping }
        }
        state.withLock { state in
            state.openSockets[id] = nil
            _ = close(fd)
            if !state.stopping, let thread = state.connectionThreads.removeValue(forKey: id) {
                thread.detach()
            }
        }
    }

    // MARK: - Stopping

    /// True once `stop()` has begun.
    var isStopping: Bool { stopFlag.load(ordering: .acquiring) }

    /// Waits until `deadline` (monotonic seconds): the origin's one delay (a slow server, a paced body); returns false
    /// early, within 10 ms, if the origin stops.
    func delay(until deadline: Double) -> Bool {
        !Poll.until(timeout: deadline - MonotonicClock.now()) { isStopping }
    }

    /// Closes the listener, shuts down every open connection and joins every thread.
    /// Idempotent; concurrent callers all return after the shutdown is complete.
    func stop() {
        stopGate.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            let acceptThread = state.withLock { state -> JoinableThread? in
                state.stopping = true
                return state.acceptThread
            }
            stopFlag.store(true, ordering: .releasing)
            _ = shutdown(listenFD, Int32(SHUT_RDWR))
            acceptThread?.join()
            _ = close(listenFD)
            let threads = state.withLock { state -> [JoinableThread] in
                for fd in state.openSockets.values { _ = shutdown(fd, Int32(SHUT_RDWR)) }
                defer { state.connectionThreads = [:] }
                return Array(state.connectionThreads.values)
            }
            for thread in threads { thread.join() }
        }
    }

    // MARK: - Routing and recording

    /// Picks the response for a request: exact route, else longest matching prefix
    /// route (handler runs outside the lock), else a 404.
    func response(for request: RecordedRequest) -> OriginResponse {
        let match = state.withLock { state -> (OriginResponse?, Handler?) in
            if let exact = state.exactRoutes[request.path] { return (exact, nil) }
            let best = state.prefixRoutes
                .filter { request.path.hasPrefix($0.prefix) }
                .max { $0.prefix.count < $1.prefix.count }
            return (nil, best?.handler)
        }
        if let exact = match.0 { return exact }
        if let handler = match.1 { return handler(request) }
        return .status(404)
    }

    /// Appends a request to the log.
    func record(_ request: RecordedRequest) {
        state.withLock { state in
            state.requests.append(request)
            state.requestCounts[request.path, default: 0] += 1
        }
    }

    /// Adds body bytes written to a socket for `path`.
    func addBodyBytes(_ count: Int, path: String) {
        guard count > 0 else { return }
        state.withLock { $0.bodyBytes[path, default: 0] += count }
    }
}
