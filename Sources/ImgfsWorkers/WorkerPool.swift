import Dispatch
import Glibc
import Synchronization

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

// MARK: - JobQueue

/// The jobs of a ``WorkerPool``, what its threads wait on, and what its drains wait for. The threads hold this, not the
/// pool, so that a pool nobody holds any more can let them end.
///
/// Guarantees: jobs are taken in the order they were submitted, each once; a drain is released once every job
/// submitted before it has finished (and was let go) or was dropped; once stopped, nothing more is taken and each
/// thread's ``serve()`` returns after its running job; once closed, the queued jobs still run, then ``serve()``
/// returns.
final class JobQueue: Sendable {
    typealias Job = @Sendable () -> Void

    private struct State {
        /// A taken job's closure is let go at once (what it captures may be large), its slot removed in batches.
        var jobs: [(sequence: UInt64, run: Job?)] = []
        /// The position of the next job to take in `jobs`.
        var head = 0
        var nextSequence: UInt64 = 0
        var running: [UInt64] = []
        var drains: [(before: UInt64, done: DispatchSemaphore)] = []
        var accepting = true
        var stopped = false

        /// The sequence number of the oldest job not finished yet (`nextSequence` when there is none).
        var oldestUnfinished: UInt64 {
            let queued = head < jobs.count ? jobs[head].sequence : nextSequence
            return min(queued, running.min() ?? nextSequence)
        }

        /// Removes the drains that need wait no more, and returns what releases them.
        mutating func releasedDrains() -> [DispatchSemaphore] {
            let oldest = oldestUnfinished
            let released = drains.filter { $0.before <= oldest }.map(\.done)
            drains.removeAll { $0.before <= oldest }
            return released
        }

        mutating func take() -> (sequence: UInt64, run: Job)? {
            guard head < jobs.count, let run = jobs[head].run else { return nil }
            let job = (sequence: jobs[head].sequence, run: run)
            jobs[head].run = nil
            head += 1
            if head > 1024, head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            running.append(job.sequence)
            return job
        }
    }

    private let state = Mutex(State())
    /// Signalled once per job submitted, and once per thread at a stop or a close.
    private let wake = DispatchSemaphore(value: 0)
    private let threads: Int

    init(threads: Int) {
        self.threads = threads
    }

    /// Queues `job`, unless the queue was stopped or closed.
    func submit(_ job: @escaping Job) {
        let accepted = state.withLock { state -> Bool in
            guard state.accepting else { return false }
            state.jobs.append((state.nextSequence, job))
            state.nextSequence += 1
            return true
        }
        if accepted { wake.signal() }
    }

    /// Runs jobs on the calling thread until the queue is stopped, or closed and empty.
    func serve() {
        while let sequence = runNext() {
            let released = state.withLock { state in
                state.running.removeAll { $0 == sequence }
                return state.releasedDrains()
            }
            released.forEach { $0.signal() }
        }
    }

    /// Waits for the next job and runs it; returns its sequence number once it has run and is let go (so a drain
    /// never returns while the job still holds what it captured), or nil when the thread should end.
    private func runNext() -> UInt64? {
        while true {
            wake.wait()
            let next = state.withLock { state -> (sequence: UInt64, run: Job)?? in
                if state.stopped { return .some(nil) }
                if let job = state.take() { return job }
                return state.accepting ? nil : .some(nil)
            }
            guard let next else { continue }
            guard let job = next else { return nil }
            job.run()
            return job.sequence
        }
    }

    /// Returns once every job submitted before the call has finished or was dropped.
    func drain() {
        let done = state.withLock { state -> DispatchSemaphore? in
            guard state.oldestUnfinished < state.nextSequence else { return nil }
            let done = DispatchSemaphore(value: 0)
            state.drains.append((state.nextSequence, done))
            return done
        }
        done?.wait()
    }

    /// Drops the queued jobs and refuses new ones; the threads end once their running job has.
    func stop() {
        let released = state.withLock { state in
            state.accepting = false
            state.stopped = true
            state.jobs = []
            state.head = 0
            return state.releasedDrains()
        }
        for _ in 0..<threads { wake.signal() }
        released.forEach { $0.signal() }
    }

    /// Refuses new jobs; the threads end once the queued ones have run.
    func close() {
        state.withLock { $0.accepting = false }
        for _ in 0..<threads { wake.signal() }
    }
}
