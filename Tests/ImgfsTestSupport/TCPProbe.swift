#if canImport(Glibc)
    import Glibc
#endif

/// Whether a server a test started (nginx, a Python server in a network namespace) accepts connections yet: what a
/// test polls instead of sleeping after the start.
///
/// Guarantees: ``accepts(host:port:)`` connects once (blocking) to an IPv4 address, closes the socket before it
/// returns, and sends nothing, so the server sees a connection that ends without a request.
public enum TCPProbe {
    /// Whether a TCP connection to `host:port` (an IPv4 literal) is accepted now.
    public static func accepts(host: String, port: UInt16) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return false }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { _ = close(fd) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}
