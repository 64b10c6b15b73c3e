import Glibc
import ImgfsModel

/// The life of a memory-pressure source's polling thread, shared by the PSI, MemAvailable and cgroup sources: started
/// once, stopped once, never started again.
///
/// Guarantees: ``start(name:_:)`` starts the thread only from the idle state; ``stop()`` is idempotent, marks the
/// source stopped before it wakes and joins the thread (returning at once when called from that thread), and returns
/// true only for the call that stopped a source not stopped before; ``repeatEvery(_:wakeFD:_:)`` runs its work until
/// the source is stopped, waking at once when it is.
final class PollingLifecycle: Sendable {
    private enum Phase {
        case idle
        case running(PollingWorker)
        case stopped
    }

    private let phase = Locked(Phase.idle)

    /// Starts `body` on a thread named `name`; false when the source was started or stopped already.
    func start(name: String, _ body: @escaping @Sendable (_ wakeFD: Int32) -> Void) throws -> Bool {
        try phase.withLock { phase -> Bool in
            guard case .idle = phase else { return false }
            phase = .running(try PollingWorker(name: name, body))
            return true
        }
    }

    /// Stops the source (see the guarantees); true when this call did.
    @discardableResult
    func stop() -> Bool {
        let previous = phase.withLock { phase -> Phase in
            defer { phase = .stopped }
            return phase
        }
        if case .running(let worker) = previous { worker.stop() }
        if case .stopped = previous { return false }
        return true
    }

    var isStopped: Bool {
        phase.withLock { phase in
            if case .stopped = phase { return true }
            return false
        }
    }

    /// On the polling thread: runs `work` now and then every `interval` until the source is stopped.
    func repeatEvery(_ interval: Duration, wakeFD: Int32, _ work: () -> Void) {
        while !isStopped {
            work()
            var wake = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
            if isStopped || poll(&wake, 1, interval.pollTimeout) > 0 { return }
        }
    }
}
