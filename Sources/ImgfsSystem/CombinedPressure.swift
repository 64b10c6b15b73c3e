import ImgfsModel
import ImgfsPipeline

/// Several pressure sources behind one handler, such as PSI plus a `ManualPressure` for SIGUSR1.
///
/// Guarantees: `start` starts every source with one shared handler that never runs twice at once (a report arriving
/// while the handler runs is dropped, since the running call already answers it); `stop` stops every source and then
/// waits for a running call, so no call is made after it returns. `start` while started is ignored; after `stop`, a
/// new `start` restarts the sources that allow it (`ManualPressure`; PSI and MemAvailable sources stay stopped).
public final class CombinedPressure: MemoryPressureSource, Sendable {
    /// The combined sources, in the order they are started and stopped.
    public let sources: [any MemoryPressureSource]
    private let gate = HandlerGate()

    /// Combines `sources`; none is started yet.
    public init(sources: [any MemoryPressureSource]) {
        self.sources = sources
    }

    /// Starts every source; their reports reach `onPressure` one at a time.
    public func start(_ onPressure: @escaping @Sendable (_ reason: String) -> Void) {
        guard gate.open(onPressure) else { return }
        for source in sources {
            source.start { [gate] reason in gate.deliver(reason) }
        }
    }

    /// Stops every source, then waits for a running call of the handler; idempotent.
    public func stop() {
        for source in sources { source.stop() }
        gate.close()
    }
}
