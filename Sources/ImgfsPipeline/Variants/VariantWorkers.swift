import Foundation
import ImgfsModel

/// A fixed set of threads that run submitted jobs in the order they came.
///
/// Guarantees: at most `count` jobs run at once, each on one of the pool's own threads (never on the caller's, so a
/// FUSE thread that submits never decodes); a job submitted after ``stop()`` is not run.
public final class VariantWorkers: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
    }

    /// How many threads run jobs.
    public let count: Int
    private let queue = Locked(Queue())
    private let signal = DispatchSemaphore(value: 0)

    /// Starts `count` threads (at least one) named `imgfs-variant-<n>`.
    public init(count: Int) {
        self.count = max(1, count)
        for index in 0..<self.count {
            // Named from inside: on Linux a name set before start() does not reach the thread (and even from inside,
            // Foundation may not pass it on when the thread runs before start() returns: ``isWorkerThread`` is what
            // to rely on).
            let thread = Thread { [self] in
                Thread.current.threadDictionary[Self.marker] = true
                Thread.current.name = "imgfs-variant-\(index)"
                work()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Whether the calling thread is a worker of some pool.
    public static var isWorkerThread: Bool { Thread.current.threadDictionary[marker] as? Bool == true }

    private static let marker = "imgfs.variant-worker"

    /// Queues `job`.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        let accepted = queue.withLock { queue -> Bool in
            guard !queue.stopped else { return false }
            queue.jobs.append(job)
            return true
        }
        if accepted { signal.signal() }
    }

    /// How many jobs wait for a thread.
    public var waiting: Int { queue.withLock { $0.jobs.count } }

    /// Lets the threads finish the job they run and exit; queued jobs are dropped.
    public func stop() {
        queue.withLock {
            $0.stopped = true; $0.jobs = []
        }
        for _ in 0..<count { signal.signal() }
    }

    private func work() {
        while true {
            signal.wait()
            let next = queue.withLock { queue -> (@Sendable () -> Void)?? in
                if queue.stopped { return .none }
                return .some(queue.jobs.isEmpty ? nil : queue.jobs.removeFirst())
            }
            guard let next else { return }
            next?()
        }
    }
}
