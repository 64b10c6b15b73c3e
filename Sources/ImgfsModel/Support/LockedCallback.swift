/// A closure that one part installs and others call, kept behind a lock and called without it.
///
/// Why not `Locked<((Argument) -> Output)?>`: a closure kept as a lock's value is wrapped in two more reabstraction
/// thunks by every `withLock` (its `inout` access converts it on the way in and again on the way back), so each call
/// runs through the thunks of all the calls before it, gets slower, and in the end overflows the stack. Here the lock
/// guards a reference to an object that holds the closure, which no access converts.
///
/// Guarantees: thread safe; calling costs the same however often it was called; nil until a closure is installed; a
/// later ``install(_:)`` replaces the closure for every call that starts after it.
public final class LockedCallback<Argument, Output>: Sendable {
    private final class Holder: Sendable {
        let call: @Sendable (Argument) -> Output
        init(_ call: @escaping @Sendable (Argument) -> Output) { self.call = call }
    }

    private let holder = Locked<Holder?>(nil)

    /// No closure yet.
    public init() {}

    /// Installs `call` (replacing the closure before).
    public func install(_ call: @escaping @Sendable (Argument) -> Output) {
        let installed = Holder(call)
        holder.withLock { $0 = installed }
    }

    /// Whether a closure is installed.
    public var isInstalled: Bool { holder.withLock { $0 } != nil }

    /// The installed closure's answer for `argument`, called without the lock held; nil when none is installed.
    @discardableResult
    public func callAsFunction(_ argument: Argument) -> Output? {
        holder.withLock { $0 }?.call(argument)
    }
}
