#if canImport(Glibc)
    import Glibc
#endif

/// Thin, checked wrappers around the POSIX socket calls the origin needs.
///
/// Every call retries on `EINTR`, never raises `SIGPIPE` (`MSG_NOSIGNAL`), and
/// reports failure through its return value or a thrown `TestSupportError`.
enum SocketIO {
    // MARK: - Listening

    /// Creates an IPv4 TCP socket bound to `host:port` and listening with `backlog`.
    /// The socket is close-on-exec and has `SO_REUSEADDR` set.
    static func listen(host: String, port: UInt16, backlog: Int32) throws -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else {
            throw TestSupportError.invalidArgument("host \(host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError.fromErrno("socket") }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, name: "setsockopt(SO_REUSEADDR)")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw TestSupportError.fromErrno("bind(\(host):\(port))") }
            guard Glibc.listen(fd, backlog) == 0 else { throw TestSupportError.fromErrno("listen") }
            return fd
        } catch {
            _ = close(fd)
            throw error
        }
    }

    /// The local port a bound socket ended up on (resolves port 0 to the ephemeral port).
    static func localPort(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw TestSupportError.fromErrno("getsockname") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Sets an integer socket option.
    static func setOption(_ fd: Int32, _ level: Int32, _ option: Int32, _ value: Int32, name: String) throws {
        var value = value
        guard setsockopt(fd, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw TestSupportError.fromErrno(name)
        }
    }

    // MARK: - Accepting

    private typealias Accept4 =
        @convention(c) (
            Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32
        ) -> Int32

    /// glibc's `accept4`, which Swift's Glibc module does not export (it is a GNU extension).
    private static let accept4Function: Accept4? = dlsym(nil, "accept4").map {
        unsafeBitCast($0, to: Accept4.self)
    }

    /// Accepts a connection whose descriptor is close-on-exec from the start, so
    /// children spawned concurrently never inherit it. Returns -1 with `errno` set on error.
    static func acceptConnection(_ listener: Int32) -> Int32 {
        if let accept4 = accept4Function {
            return accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
        }
        let fd = accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }

    // MARK: - Data transfer

    /// Receives up to `count` bytes and appends them to `buffer`.
    /// Returns the number of bytes read: 0 on orderly EOF, -1 on error.
    static func receive(_ fd: Int32, into buffer: inout [UInt8], count: Int = 16 * 1024) -> Int {
        var chunk = [UInt8](repeating: 0, count: count)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n > 0 { buffer.append(contentsOf: chunk[0..<n]) }
            return n
        }
    }

    /// Writes all of `bytes`, retrying partial writes and `EINTR`.
    /// Returns how many bytes were written; less than `bytes.count` means the peer
    /// is gone or the socket was shut down.
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        var written = 0
        while written < bytes.count {
            let n = send(fd, bytes.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return written
            }
            written += n
        }
        return written
    }

    /// `sendAll` for an array.
    @discardableResult
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { sendAll(fd, $0) }
    }

    // MARK: - Closing

    /// Half-closes the write side (the peer sees FIN), then reads and discards until the
    /// peer closes too, `timeout` passes, or `shouldStop` says so. Reading before
    /// `close` keeps Linux from turning the close into a reset because of unread data.
    static func finishWriting(_ fd: Int32, timeout: Double, shouldStop: () -> Bool) {
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { return }
        let deadline = MonotonicClock.now() + timeout
        var scratch: [UInt8] = []
        while !shouldStop() && MonotonicClock.now() < deadline {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 20)
            if ready < 0 && errno != EINTR { return }
            if ready <= 0 { continue }
            scratch.removeAll(keepingCapacity: true)
            if receive(fd, into: &scratch) <= 0 { return }
        }
    }

    /// Arms `SO_LINGER {1, 0}` so that the next `close` sends RST instead of FIN.
    static func armReset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }
}

/// Seconds on the monotonic clock (unaffected by wall-clock changes).
enum MonotonicClock {
    /// The current monotonic time in seconds.
    static func now() -> Double {
        var spec = timespec()
        _ = clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
