import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline

/// The shared store on a Redis server (or a compatible one: Valkey, KeyDB, managed services) through hiredis.
///
/// Guarantees: thread safe: each call borrows a connection of its own from a small pool (opened on demand, at most
/// one per calling thread at a time) and returns it afterwards; a connection that failed is closed, never reused;
/// every call waits at most `timeout` for the connection and for each reply; lease renewal and release compare the
/// lease's value atomically (a Lua script), so a mount never extends or deletes another mount's lease.
public final class RedisStore: SharedStoring {
    private let address: SharedCacheAddress
    private let timeout: TimeInterval
    private let idle = Locked<[RedisConnection]>([])

    private static let renewScript = Array(
        """
        if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end
        """.utf8)
    private static let deleteScript = Array(
        """
        if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end
        """.utf8)

    /// A store at `address`; nothing is connected until the first call.
    ///
    /// SIGPIPE is ignored from then on, process-wide: hiredis writes with plain `write`, and a server that closed the
    /// connection would otherwise kill the mount (the write then fails with EPIPE, and the store is reported down).
    public init(address: SharedCacheAddress, timeout: TimeInterval) {
        self.address = address
        self.timeout = timeout
        signal(SIGPIPE, SIG_IGN)
    }

    /// The value of `key` (`GET`), or nil when there is none.
    public func get(_ key: String) throws(SharedStoreError) -> [UInt8]? {
        switch try run(["GET", key]) {
        case .string(let value): return value
        case .null: return nil
        case let other: throw .refused("unexpected reply to GET: \(other)")
        }
    }

    /// Sets `key` to `value`, expiring after `milliseconds` (`SET … PX`).
    public func set(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError) {
        _ = try run([Array("SET".utf8), Array(key.utf8), value, Array("PX".utf8), Array(String(milliseconds).utf8)])
    }

    /// Sets `key` to `value` only if it has no value (`SET … NX PX`); whether it did.
    public func setIfAbsent(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool {
        let reply = try run([
            Array("SET".utf8), Array(key.utf8), value, Array("NX".utf8), Array("PX".utf8),
            Array(String(milliseconds).utf8)
        ])
        return reply != .null
    }

    /// Extends `key` to expire after `milliseconds` if its value is still `value` (one script, so atomic); whether it
    /// was.
    public func renew(_ key: String, ifValue value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool {
        let reply = try run([
            Array("EVAL".utf8), Self.renewScript, Array("1".utf8), Array(key.utf8), value,
            Array(String(milliseconds).utf8)
        ])
        return reply == .integer(1)
    }

    /// Deletes `key` if its value is still `value` (one script, so atomic).
    public func delete(_ key: String, ifValue value: [UInt8]) throws(SharedStoreError) {
        _ = try run([Array("EVAL".utf8), Self.deleteScript, Array("1".utf8), Array(key.utf8), value])
    }

    /// Whether the server answers PING now (for `--shared-cache` at start-up: a warning, never a failure).
    public func ping() throws(SharedStoreError) {
        _ = try run(["PING"])
    }

    private func run(_ words: [String]) throws(SharedStoreError) -> RedisConnection.Reply {
        try run(words.map { Array($0.utf8) })
    }

    private func run(_ arguments: [[UInt8]]) throws(SharedStoreError) -> RedisConnection.Reply {
        if let pooled = idle.withLock({ $0.popLast() }) {
            do throws(SharedStoreError) {
                return try finish(pooled, arguments)
            } catch .unavailable {
                // A pooled connection the server closed (a restart, an idle timeout): try once on a new one.
            }
        }
        return try finish(try RedisConnection(address: address, timeout: timeout), arguments)
    }

    /// Runs the command on `connection` and pools the connection again unless it broke.
    private func finish(
        _ connection: RedisConnection,
        _ arguments: [[UInt8]]
    ) throws(SharedStoreError) -> RedisConnection.Reply {
        defer { if !connection.isBroken { idle.withLock { $0.append(connection) } } }
        return try connection.command(arguments)
    }
}
