import Glibc
import ImgfsModel

/// Holds a pressure handler and calls it for sources that may fire from several threads.
///
/// Guarantees: the handler never runs twice at once (a call arriving while another runs is dropped, since the running
/// one already answers the pressure, and so is a nested call from inside the handler); after `close` returns no call
/// is running or will start, except that `close` called from inside the handler returns at once.
final class HandlerGate: Sendable {
    typealias Handler = @Sendable (_ reason: String) -> Void

    private struct State {
        var handler: Handler?
        var caller: pthread_t?
    }

    private let state = Locked(State())
    private let calls = Locked(())

    /// Installs `handler`; returns false and changes nothing when one is installed already.
    func open(_ handler: @escaping Handler) -> Bool {
        state.withLock { state in
            guard state.handler == nil else { return false }
            state.handler = handler
            return true
        }
    }

    /// Whether a handler is installed.
    var isOpen: Bool { state.withLock { $0.handler != nil } }

    /// Calls the handler with `reason` on the calling thread; returns whether it was called.
    @discardableResult
    func deliver(_ reason: String) -> Bool {
        let delivered: Bool? = calls.withLockIfAvailable { _ in
            let handler = state.withLock { state -> Handler? in
                guard let handler = state.handler else { return nil }
                state.caller = pthread_self()
                return handler
            }
            guard let handler else { return false }
            handler(reason)
            state.withLock { $0.caller = nil }
            return true
        }
        return delivered ?? false
    }

    /// Removes the handler and waits for a call running on another thread to finish.
    func close() {
        let insideHandler = state.withLock { state -> Bool in
            state.handler = nil
            guard let caller = state.caller else { return false }
            return pthread_equal(caller, pthread_self()) != 0
        }
        if !insideHandler { calls.withLock { _ in } }
    }
}
