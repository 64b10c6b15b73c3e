import Foundation
import ImgfsModel

/// Where the shared store is: `redis://[[user]:password@]host[:port][/db]` (`--shared-cache`).
///
/// Guarantees: parsing accepts exactly that form (host names, IPv4, bracketed IPv6; port 1–65535, default 6379;
/// database 0 or more, default 0) and rejects anything else with a message that says what is wrong; the password is
/// percent-decoded and never part of ``description``.
public struct SharedCacheAddress: Equatable, Sendable, CustomStringConvertible {
    /// The server's host name or IP address.
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The database number (`SELECT`).
    public var database: Int
    /// The user name to authenticate as (`AUTH user password`), if any.
    public var user: String?
    /// The password to authenticate with, if any.
    public var password: String?

    /// The address of a server at `host`; port, database and credentials default to Redis's.
    public init(host: String, port: Int = 6379, database: Int = 0, user: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
    }

    /// Parses `text`; throws a readable reason.
    public init(parsing text: String) throws(SharedCacheAddressError) {
        guard text.hasPrefix("redis://") else { throw .invalid("must start with redis://") }
        var rest = Substring(text.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { throw .invalid("credentials must be [user]:password@") }
            user = parts[0].isEmpty ? nil : String(parts[0]).removingPercentEncoding ?? String(parts[0])
            password = String(parts[1]).removingPercentEncoding ?? String(parts[1])
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let text = rest[rest.index(after: slash)...]
            guard text.isEmpty || Int(text).map({ $0 >= 0 }) == true else {
                throw .invalid("database must be a number")
            }
            database = Int(text) ?? 0
            rest = rest[..<slash]
        }
        self.database = database
        var port = 6379
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalid("unclosed [ in the host") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()) else { throw .invalid("bad port") }
                port = value
            }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw .invalid("bad host or port") }
            host = String(parts[0])
            if parts.count == 2 {
                guard let value = Int(parts[1]) else { throw .invalid("bad port") }
                port = value
            }
        }
        guard !host.isEmpty else { throw .invalid("no host") }
        guard (1...65535).contains(port) else { throw .invalid("port must be 1-65535") }
        self.port = port
    }

    /// The address without credentials, for logs.
    public var description: String {
        let host = host.contains(":") ? "[\(host)]" : host
        return "redis://\(host):\(port)/\(database)"
    }
}

/// Why a `--shared-cache` address was rejected.
public enum SharedCacheAddressError: Error, Equatable, CustomStringConvertible {
    case invalid(String)

    /// One line that says what is wrong with the address.
    public var description: String {
        switch self {
        case .invalid(let why): "not a redis://[:password@]host:port[/db] address: \(why)"
        }
    }
}
