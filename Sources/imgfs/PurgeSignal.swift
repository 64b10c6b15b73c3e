import Foundation
import Glibc
import ImgfsSystem

/// SIGUSR1 purges the memory cache (the manual form of a memory warning). The signal is blocked in every thread and
/// taken by one thread with sigwait, so it never interrupts a FUSE or curl thread.
enum PurgeSignal {
    static let source = ManualPressure()

    /// Blocks SIGUSR1 in the calling thread (threads started later inherit it) and starts the waiting thread.
    static func blockInThisAndNewThreads() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let thread = Thread {
            var waiting = sigset_t()
            sigemptyset(&waiting)
            sigaddset(&waiting, SIGUSR1)
            var received: Int32 = 0
            while sigwait(&waiting, &received) == 0 {
                source.fire(reason: "SIGUSR1")
            }
        }
        thread.name = "imgfs-sigusr1"
        thread.start()
    }
}
