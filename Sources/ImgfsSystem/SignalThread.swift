import Glibc
import ImgfsWorkers

/// The signals the daemon answers, all taken by one thread of its own: SIGHUP (reload), SIGUSR1 (purge the memory
/// caches) and SIGINT or SIGTERM (stop serving and unmount).
///
/// Guarantees: ``blockHandledSignals()``, called before any other thread is started, gives these four signals their
/// default disposition (a daemon started in the background inherits SIGINT ignored, and an ignored signal is
/// discarded, never waited for) and blocks them, and SIGUSR2 (which wakes the FUSE loop), in the calling thread and
/// so in every thread started after it: none of them ever interrupts a FUSE, curl or worker thread, and none takes
/// its default action. ``start(_:)`` starts the one thread that waits for them with sigwait and hands each to
/// `handle`, one at a time, in the order they arrive (the same signal arriving twice while a handler runs is handled
/// once more).
public enum SignalThread {
    /// What a signal asks for.
    public enum Request: Sendable, Equatable {
        /// SIGHUP: reread the policy file, reopen the log file.
        case reload
        /// SIGUSR1: empty the memory caches (a manual memory warning).
        case purge
        /// SIGINT or SIGTERM: stop serving, write what is queued, unmount.
        case terminate
    }

    private static let waited = [SIGHUP, SIGUSR1, SIGINT, SIGTERM]

    private static func set(of signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// Blocks the handled signals in the calling thread and in every thread it starts later. Call first.
    public static func blockHandledSignals() {
        for number in waited { signal(number, SIG_DFL) }
        var blocked = set(of: waited + [SIGUSR2])
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
    }

    /// What `number` asks for, nil for a signal this thread does not wait for.
    static func request(for number: Int32) -> Request? {
        switch number {
        case SIGHUP: .reload
        case SIGUSR1: .purge
        case SIGINT, SIGTERM: .terminate
        default: nil
        }
    }

    /// Starts the thread that waits for the handled signals and calls `handle` for each (on that thread).
    public static func start(_ handle: @escaping @Sendable (Request) -> Void) throws(SystemCallError) {
        _ = try WorkerThread(name: "imgfs-signals") {
            var waiting = set(of: waited)
            var received: Int32 = 0
            while sigwait(&waiting, &received) == 0 {
                if let request = request(for: received) { handle(request) }
            }
        }
    }
}
