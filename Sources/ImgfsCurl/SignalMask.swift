import Glibc

/// Keeps termination signals away from worker threads, so they reach the thread that handles them.
enum SignalMask {
    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread.
    static func blockTerminationSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }
}
