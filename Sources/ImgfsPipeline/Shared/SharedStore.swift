import ImgfsModel

/// A key-value store several mounts share (Redis): the few operations the shared tier needs.
///
/// Implementations must be thread safe. Every call may block its caller, but never longer than the store's own
/// timeout (`--tune shared-timeout`); the shared tier only calls from its own threads, never from a FUSE or fetching
/// thread.
/// Every failure (unreachable, timed out, full, an error reply) throws ``SharedStoreError``.
public protocol SharedStoring: Sendable {
    /// The value of `key`, or nil when there is none.
    func get(_ key: String) throws(SharedStoreError) -> [UInt8]?
    /// Sets `key` to `value`, expiring after `milliseconds`.
    func set(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError)
    /// Sets `key` to `value` only if it has no value (`SET … NX PX`); whether it did.
    func setIfAbsent(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool
    /// Extends `key` to expire after `milliseconds` if its value is still `value`; whether it was.
    func renew(_ key: String, ifValue value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool
    /// Deletes `key` if its value is still `value`.
    func delete(_ key: String, ifValue value: [UInt8]) throws(SharedStoreError)
}

/// Why the shared store could not answer.
public enum SharedStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No connection (refused, reset, closed); the text says what happened.
    case unavailable(String)
    /// The store did not answer within the timeout.
    case timedOut
    /// The store answered with an error (e.g. `OOM command not allowed` when it is full).
    case refused(String)

    /// One line that says why the store could not answer.
    public var description: String {
        switch self {
        case .unavailable(let why): "unavailable: \(why)"
        case .timedOut: "no answer within the timeout"
        case .refused(let why): "error reply: \(why)"
        }
    }
}
