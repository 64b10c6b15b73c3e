#if canImport(Glibc)
    import Glibc
#endif

/// A real HTTP/1.1 origin server on a loopback TCP port, for integration tests.
///
/// Guarantees:
/// - It is listening when `init` returns (backlog 1024, `SO_REUSEADDR`).
/// - Every accepted connection gets its own thread (hundreds at once are fine) and
///   serves GET and HEAD with keep-alive, honouring `Connection: close`.
/// - Routing: an exact route for the request target (query included) wins; otherwise
///   the longest matching prefix route answers; otherwise `404 Not Found`.
/// - Every request is recorded before it is answered.
/// - `stop()` (also run by `deinit`) returns only when the listener is closed and
///   every thread it started has finished; connecting afterwards is refused.
public final class TestOrigin: @unchecked Sendable {
    private let core: OriginCore

    /// Binds `host:port` (port 0 picks an ephemeral port), listens and starts accepting.
    /// Throws `TestSupportError` if the address cannot be bound or a thread not started.
    public init(host: String = "127.0.0.1", port: UInt16 = 0) throws {
        core = try OriginCore(host: host, port: port, backlog: 1024)
        do {
            try core.startAccepting()
        } catch {
            core.stop()
            throw error
        }
    }

    deinit {
        core.stop()
    }

    // MARK: - Address

    /// The TCP port the origin listens on.
    public var port: UInt16 { core.port }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(core.port)" }

    // MARK: - Routes

    /// Answers requests whose target is exactly `path` (query string included, as
    /// sent by the client) with `response`. Replaces an earlier route for `path`.
    public func route(_ path: String, _ response: OriginResponse) {
        core.state.withLock { $0.exactRoutes[path] = response }
    }

    /// Answers every request whose target starts with `prefix` (and has no exact
    /// route) by calling `handler` on the connection's thread, outside any lock; the
    /// longest matching prefix wins. Replaces an earlier handler for the same prefix.
    /// The handler may keep its own (thread-safe) state and may call this origin.
    public func route(prefix: String, _ handler: @escaping @Sendable (RecordedRequest) -> OriginResponse) {
        core.state.withLock { state in
            state.prefixRoutes.removeAll { $0.prefix == prefix }
            state.prefixRoutes.append((prefix: prefix, handler: handler))
        }
    }

    /// Removes every exact and prefix route (all requests then get 404).
    public func removeAllRoutes() {
        core.state.withLock { state in
            state.exactRoutes = [:]
            state.prefixRoutes = []
        }
    }

    // MARK: - Recording

    /// How many requests arrived for exactly `path` (query included) since the last reset.
    public func requestCount(_ path: String) -> Int {
        core.state.withLock { $0.requestCounts[path] ?? 0 }
    }

    /// How many requests arrived in total since the last reset.
    public var totalRequests: Int {
        core.state.withLock { $0.requests.count }
    }

    /// Every request since the last reset, in arrival order.
    public func requests() -> [RecordedRequest] {
        core.state.withLock { $0.requests }
    }

    /// Body bytes (payload, without chunk framing) actually written to sockets for
    /// requests to `path` since the last reset.
    public func bodyBytesSent(_ path: String) -> Int {
        core.state.withLock { $0.bodyBytes[path] ?? 0 }
    }

    /// How many TCP connections were accepted since the last reset.
    public var connectionCount: Int {
        core.state.withLock { $0.connectionCount }
    }

    /// How many connections are open right now.
    public var openConnections: Int {
        core.state.withLock { $0.openSockets.count }
    }

    /// Forgets recorded requests, per-path counts, body byte counts and the
    /// connection count. Routes are kept.
    public func resetCounters() {
        core.state.withLock { state in
            state.requests = []
            state.requestCounts = [:]
            state.bodyBytes = [:]
            state.connectionCount = 0
        }
    }

    // MARK: - Lifecycle

    /// Closes the listener, shuts down (shutdown + close) every open connection,
    /// interrupts delays and drips, and waits for every thread to finish.
    /// Idempotent and safe to call from several threads.
    public func stop() {
        core.stop()
    }
}
