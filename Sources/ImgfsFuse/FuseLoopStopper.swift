import CFuse
import CFuseShims
import Foundation
import ImgfsModel
import ImgfsWorkers

/// Ends a mount's request loop from another thread: what the signal thread calls on SIGINT or SIGTERM.
///
/// Guarantees: after ``stop()`` the loop of ``FuseMount/serve(beforeUnmount:)`` returns, and the mount then writes
/// what is queued and unmounts as after `fusermount3 -u`. The session is marked exited, and the loop's thread (which
/// waits in sem_wait) is woken by SIGUSR2 every 50 ms until the loop has returned, so a wake-up that lands just
/// before it starts to wait is not lost. A stop before the loop starts makes it return at once; more than one stop
/// is one stop.
public final class FuseLoopStopper: Sendable {
    private struct State {
        var loopThread: pthread_t?
        var stopped = false
    }

    private let session: FuseSessionPointer
    private let state = Locked(State())

    init(session: FuseSessionPointer) {
        self.session = session
    }

    /// Called by the loop's thread just before the loop: it may be woken from now on.
    func loopStarting() {
        imgfs_fuse_accept_wake()
        state.withLock { $0.loopThread = pthread_self() }
    }

    /// Called by the loop's thread once the loop has returned.
    func loopEnded() {
        state.withLock { $0.loopThread = nil }
    }

    /// Ends the loop (see the type's guarantees); returns at once, the loop ends soon after.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        fuse_session_exit(session.raw)
        let waker = WorkerPool(name: "imgfs-fuse-wake")
        waker.submit { [self] in
            while let thread = state.withLock({ $0.loopThread }) {
                _ = imgfs_fuse_wake(UInt(thread))
                usleep(50_000)
            }
        }
    }
}
