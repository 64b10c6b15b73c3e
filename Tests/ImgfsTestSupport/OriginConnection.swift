#if canImport(Glibc)
    import Glibc
#endif

/// Serves the HTTP/1.1 requests arriving on one accepted socket, one after another
/// (keep-alive and pipelining), until the client or a response closes it.
struct OriginConnection {
    private let core: OriginCore
    private let fd: Int32
    private let id: Int
    /// Bytes received but not consumed yet (the start of the next request).
    private var buffer: [UInt8] = []

    init(core: OriginCore, fd: Int32, id: Int) {
        self.core = core
        self.fd = fd
        self.id = id
    }

    /// Runs the request loop, then closes and unregisters the socket.
    mutating func serve() {
        var ending = OriginResponseWriter.Ending.close
        while !core.isStopping {
            guard let request = readRequest() else { break }
            core.record(request)
            ending = respond(to: request)
            if ending != .keepAlive { break }
        }
        core.finishConnection(id: id, fd: fd, reset: ending == .reset)
    }

    // MARK: - Reading

    /// Reads and parses the next request; answers 400/431 and returns nil for
    /// malformed input, returns nil on EOF or error.
    private mutating func readRequest() -> RecordedRequest? {
        var scanned = 0
        while true {
            if let end = HTTPRequestHead.findEnd(in: buffer, from: scanned) {
                let head = HTTPRequestHead(buffer[end.head])
                buffer.removeFirst(end.next)
                guard let head else {
                    sendError(400)
                    return nil
                }
                let request = RecordedRequest(
                    method: head.method, path: head.target,
                    version: head.version, headers: head.headers,
                    connectionID: id)
                guard discardBody(of: request) else { return nil }
                return request
            }
            if buffer.count > HTTPRequestHead.maximumSize {
                sendError(431)
                return nil
            }
            scanned = max(buffer.count - 3, 0)
            if SocketIO.receive(fd, into: &buffer) <= 0 { return nil }
        }
    }

    /// Reads and drops a request body announced by `Content-Length`. Returns false
    /// when the body cannot be framed (chunked request bodies are not supported) or
    /// the connection ends first.
    private mutating func discardBody(of request: RecordedRequest) -> Bool {
        if request.header("Transfer-Encoding") != nil {
            sendError(501)
            return false
        }
        guard let text = request.header("Content-Length") else { return true }
        guard var remaining = Int(text), remaining >= 0 else {
            sendError(400)
            return false
        }
        while true {
            let taken = min(remaining, buffer.count)
            buffer.removeFirst(taken)
            remaining -= taken
            if remaining == 0 { return true }
            if SocketIO.receive(fd, into: &buffer) <= 0 { return false }
        }
    }

    // MARK: - Responding

    private func respond(to request: RecordedRequest) -> OriginResponseWriter.Ending {
        var response: OriginResponse
        if request.method == "GET" || request.method == "HEAD" {
            response = core.response(for: request)
        } else {
            response = .status(405)
            response.headers.append(("Allow", "GET, HEAD"))
        }
        let writer = OriginResponseWriter(core: core, fd: fd, path: request.path)
        return writer.write(response, isHead: request.method == "HEAD", clientWantsClose: request.wantsClose)
    }

    /// Sends a short error response that closes the connection.
    private func sendError(_ status: Int) {
        var response = OriginResponse.status(status)
        response.closeAfterResponse = true
        _ = OriginResponseWriter(core: core, fd: fd, path: "").write(response, isHead: false, clientWantsClose: true)
    }
}
