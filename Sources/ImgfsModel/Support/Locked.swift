import Foundation

/// A value guarded by a lock whose waiters go to sleep at once, for the state that every request touches.
///
/// Why not `Synchronization.Mutex`: on Linux its waiters spin before they block. On a machine with few cores, where
/// the holder of a busy lock is often preempted while the readers, the FUSE threads and the fetcher compete for the
/// CPUs, the spinning only burns the time the holder needs: `perf` found 9.6 % of all CPU time spinning in
/// `Mutex._lockSlow` (the repository's state and the inode table) while 16 readers opened cached icons. This lock is
/// a pthread mutex (`NSLock`), which waits in the kernel without spinning.
///
/// Guarantees: `withLock` runs its body with exclusive access to the value, and releases the lock when the body
/// returns or throws. Not recursive: a body must not take the same lock again. The value may be non-copyable (a FUSE
/// request waiting for its one reply is kept this way).
/// A closure is not kept as the value itself (every access would wrap it again): see ``LockedCallback``.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Inlinable, so that every module's use is specialized for its value (no generic call on the hot paths).
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    /// A lock that holds `value`.
    public init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` with the lock held and the value to read or change.
    @inlinable
    public func withLock<Result: ~Copyable>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// Runs `body` with the lock held when it is free now; nil, without running `body`, when another thread holds it.
    @inlinable
    public func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
}
