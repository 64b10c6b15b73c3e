import ImgfsModel
import ImgfsPipeline

/// A pressure source fired by hand: by a test, or by the daemon's signal-watching thread on SIGUSR1 ("purge now").
///
/// Guarantees: `fire` calls the handler synchronously on the calling thread when started, never twice at once (a fire
/// that arrives while the handler runs, or from inside it, is dropped and returns false); after `stop` returns no call
/// runs or starts. It can be started again after `stop`. Not async-signal-safe: do not call `fire` from a signal
/// handler itself.
public final class ManualPressure: MemoryPressureSource, Sendable {
    private let gate = HandlerGate()

    /// A source that is not started yet.
    public init() {}

    /// Installs `onPressure`; ignored when already started.
    public func start(_ onPressure: @escaping @Sendable (_ reason: String) -> Void) {
        _ = gate.open(onPressure)
    }

    /// Removes the handler, waiting for a running call on another thread; idempotent.
    public func stop() {
        gate.close()
    }

    /// Whether the source is started.
    public var isStarted: Bool { gate.isOpen }

    /// Calls the handler with `reason`; returns whether it was called (false when not started or busy).
    @discardableResult
    public func fire(reason: String) -> Bool {
        gate.deliver(reason)
    }
}
