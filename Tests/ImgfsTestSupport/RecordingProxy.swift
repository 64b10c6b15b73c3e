import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small forward HTTP proxy on 127.0.0.1 that records what it is asked, for tests of `--proxy`.
///
/// Guarantees: it forwards only to 127.0.0.1 or localhost; an absolute-form request (`GET http://host:port/path`) is
/// sent to the origin in origin form with `Connection: close`, and `CONNECT host:port` gets `200` and a byte tunnel
/// (so https stays end to end). Every request head is recorded before it is forwarded. `stop()` closes the listener
/// and every connection and joins every thread it started.
public final class RecordingProxy: @unchecked Sendable {
    /// One request the proxy received: method, target as sent (absolute URL or `host:port`) and headers.
    public struct Entry: Sendable {
        /// The request method (`GET`, `CONNECT`).
        public let method: String
        /// The request target as sent.
        public let target: String
        /// The header fields, in order.
        public let headers: [(String, String)]
    }

    private struct State {
        var entries: [Entry] = []
        var sockets: Set<Int32> = []
        var threads: [JoinableThread] = []
        var stopping = false
    }

    private let listener: Int32
    /// The port it listens on at 127.0.0.1.
    public let port: UInt16
    private let state = Mutex(State())
    private var acceptThread: JoinableThread?

    /// Starts listening on a free port of 127.0.0.1 and accepting on its own thread.
    public init() throws {
        listener = try SocketIO.listen(host: "127.0.0.1", port: 0, backlog: 64)
        port = try SocketIO.localPort(listener)
        acceptThread = try JoinableThread.start(name: "proxy-accept", stackSize: 256 * 1024) { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Every request head received, in order.
    public var entries: [Entry] { state.withLock { $0.entries } }

    /// Closes everything and waits for every thread.
    public func stop() {
        let (first, sockets) = state.withLock { state in
            defer { state.stopping = true }
            return (!state.stopping, state.sockets)
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        _ = close(listener)
        for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        acceptThread?.join()
        for thread in state.withLock({ $0.threads }) { thread.join() }
    }

    private func acceptLoop() {
        while true {
            let fd = SocketIO.acceptConnection(listener)
            if fd < 0 {
                if state.withLock({ $0.stopping }) { return }
                continue
            }
            let registered = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.sockets.insert(fd)
                return true
            }
            guard registered else { _ = close(fd); return }
            if let thread = try? JoinableThread.start(
                name: "proxy-conn", stackSize: 512 * 1024,
                { [self] in
                    serve(fd)
                })
            {
                state.withLock { $0.threads.append(thread) }
            }
        }
    }

    private func serve(_ client: Int32) {
        defer { release(client) }
        var buffer: [UInt8] = []
        var chunk: [UInt8] = []
        var end: (head: Range<Int>, next: Int)?
        while end == nil {
            chunk.removeAll(keepingCapacity: true)
            guard SocketIO.receive(client, into: &chunk) > 0 else { return }
            buffer += chunk
            end = HTTPRequestHead.findEnd(in: buffer, from: 0)
        }
        guard let end, let head = HTTPRequestHead(buffer[end.head]) else { return }
        state.withLock { $0.entries.append(Entry(method: head.method, target: head.target, headers: head.headers)) }
        let rest = Array(buffer[end.next...])
        if head.method == "CONNECT" {
            guard let upstream = connectLocal(head.target) else { return }
            defer { release(upstream) }
            _ = SocketIO.sendAll(client, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8))
            if !rest.isEmpty { _ = SocketIO.sendAll(upstream, rest) }
            relay(client, upstream)
            return
        }
        guard head.target.hasPrefix("http://") else { return }
        let afterScheme = head.target.dropFirst(7)
        let authority = String(afterScheme.prefix { $0 != "/" })
        let path = String(afterScheme.dropFirst(authority.count))
        guard let upstream = connectLocal(authority) else { return }
        defer { release(upstream) }
        var lines = ["\(head.method) \(path.isEmpty ? "/" : path) \(head.version)"]
        for (name, value) in head.headers where !["connection", "proxy-connection"].contains(name.lowercased()) {
            lines.append("\(name): \(value)")
        }
        lines.append("Connection: close")
        _ = SocketIO.sendAll(upstream, Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8))
        relay(client, upstream)
    }

    /// Connects to `host:port` when the host is 127.0.0.1 or localhost.
    private func connectLocal(_ authority: String) -> Int32? {
        let parts = authority.split(separator: ":")
        guard parts.count == 2, ["127.0.0.1", "localhost"].contains(parts[0]), let port = UInt16(parts[1]) else {
            return nil
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { _ = close(fd); return nil }
        state.withLock { _ = $0.sockets.insert(fd) }
        return fd
    }

    /// Copies bytes both ways until either side closes.
    private func relay(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var chunk: [UInt8] = []
        while !state.withLock({ $0.stopping }) {
            guard poll(&fds, 2, 1000) >= 0 || errno == EINTR else { return }
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                chunk.removeAll(keepingCapacity: true)
                guard SocketIO.receive(entry.fd, into: &chunk) > 0,
                    SocketIO.sendAll(fds[1 - index].fd, chunk) == chunk.count
                else { return }
            }
        }
    }

    private func release(_ fd: Int32) {
        state.withLock { _ = $0.sockets.remove(fd) }
        _ = close(fd)
    }
}
