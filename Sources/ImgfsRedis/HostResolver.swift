import Foundation
import ImgfsModel

/// Resolves host names with the system resolver (getaddrinfo), for `--deny-private-networks` in the shared tier.
public enum HostResolver {
    /// Every address `host` resolves to, or nil when it cannot be resolved.
    public static func addresses(of host: String) -> [NetworkAddress]? {
        if let literal = NetworkAddress(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(first) }
        var addresses: [NetworkAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                current.pointee.ai_addr, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0,
                NI_NUMERICHOST) == 0,
                let address = NetworkAddress(
                    String(
                        decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                        as: UTF8.self))
            {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
