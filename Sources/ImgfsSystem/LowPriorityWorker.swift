import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline

/// A ``SerialWorker`` on a thread of its own at the lowest CPU priority (nice 19): background disk writes then take
/// only CPU time that readers leave unused, instead of competing with the reads that follow a burst of fetches.
///
/// Guarantees: work runs one item at a time in submission order; ``drain()`` returns after everything submitted before
/// it has run, however busy the machine is (nice 19 still gets CPU time). The thread keeps the worker alive for the
/// rest of the process (a daemon has one).
public final class LowPriorityWorker: SerialWorker, Sendable {
    private let queue = Locked<[@Sendable () -> Void]>([])
    /// Signalled once per submitted item.
    private let submitted = DispatchSemaphore(value: 0)

    /// Starts the thread, named `name`; falls back to running work at normal priority when it cannot be lowered.
    public init(name: String) throws {
        _ = try WorkerThread(name: name) { [self] in
            // On Linux, PRIO_PROCESS with who 0 is the calling thread only (nice is per thread there).
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
            run()
        }
    }

    /// Queues `work` for the thread; returns at once.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(work) }
        submitted.signal()
    }

    /// Returns once everything submitted before the call has run.
    public func drain() {
        let done = DispatchSemaphore(value: 0)
        submit { done.signal() }
        done.wait()
    }

    private func run() {
        while true {
            submitted.wait()
            // Everything queued by now runs in this turn, in order; the signals of the items it takes are consumed
            // by the turns that follow, which then find the queue empty.
            let batch = queue.withLock { queue in
                defer { queue.removeAll() }
                return queue
            }
            batch.forEach { $0() }
        }
    }
}
