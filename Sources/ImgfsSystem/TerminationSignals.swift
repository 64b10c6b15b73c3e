import Glibc

/// SIGINT, SIGTERM and SIGHUP: kept away from worker threads so that they reach the thread that handles them (the
/// FUSE loop's, which unmounts).
///
/// Guarantees: each call changes only the calling thread's mask, and only for these three signals.
public enum TerminationSignals {
    private static var set: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
        return set
    }

    /// Blocks them in the calling thread; returns the mask it had before.
    @discardableResult
    public static func block() -> sigset_t {
        var blocked = set
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        return previous
    }

    /// Unblocks them in the calling thread (a process started from a test may inherit them blocked).
    public static func unblock() {
        var unblocked = set
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// Restores a mask ``block()`` returned.
    public static func restore(_ mask: sigset_t) {
        var mask = mask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }
}
