import Glibc

/// A fixed set of threads running submitted jobs in the order they came: the one job queue of imgfs (disk writes,
/// variants, the shared tier, read-ahead, the disk cache's scan, the sweep).
///
/// Guarantees:
/// - Jobs start in submission order, at most ``count`` at once, each on one of the pool's own threads (never on the
///   caller's); ``submit(_:)`` never blocks. With one thread, a job starts only after the one before has ended.
/// - ``drain()`` returns once every job submitted before it has run (jobs those jobs submit are not waited for); it
///   must not be called from a job of the same pool, which would wait for itself.
/// - After ``stop()`` no job starts: the queued ones are dropped, later ones ignored, and each thread ends once its
///   running job has. A pool nobody holds any more runs what is queued and then ends its threads.
/// - Its threads (started by ``WorkerThread``) inherit the signal mask of the thread that creates the pool: in the
///   daemon, every signal it handles is blocked before the first thread starts, so no job is ever interrupted by one.
/// - Threads are named `name` when there is one, `name-0`, `name-1`, … when there are more (15 bytes are kept).
/// - ``Priority/background`` threads run at nice 19 (on Linux nice is per thread): they take only the CPU time others
///   leave, yet still get some, so a drain always returns. A thread whose priority cannot be lowered runs normally.
public final class WorkerPool: JobRunning, Sendable {
    /// The CPU priority of a pool's threads.
    public enum Priority: Sendable {
        /// The process's own.
        case normal
        /// The lowest (nice 19): for work that may wait, such as writing the disk cache.
        case background
    }

    /// How many threads run jobs.
    public let count: Int
    private let queue: JobQueue

    /// Starts `threads` threads (at least one) named after `name`, at `priority`. A thread that cannot be started
    /// (the process is out of threads or memory) ends the process, with the reason.
    public init(name: String, threads: Int = 1, priority: Priority = .normal) {
        count = max(1, threads)
        let queue = JobQueue(threads: count)
        self.queue = queue
        for index in 0..<count {
            let threadName = count == 1 ? name : "\(name)-\(index)"
            do {
                try WorkerThread.detach(name: threadName) {
                    // PRIO_PROCESS with who 0 is the calling thread only on Linux.
                    if priority == .background { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
                    queue.serve()
                }
            } catch {
                fatalError("could not start the thread \(threadName): \(error)")
            }
        }
    }

    deinit {
        queue.close()
    }

    /// Queues `job`; returns at once. A job submitted after ``stop()`` is not run.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        queue.submit(job)
    }

    /// Returns once every job submitted before the call has run (or was dropped by ``stop()``).
    public func drain() {
        queue.drain()
    }

    /// Drops the queued jobs and ignores later ones; each thread ends once its running job has. Returns at once.
    public func stop() {
        queue.stop()
    }
}
