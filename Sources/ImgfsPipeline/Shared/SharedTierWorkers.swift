import Foundation
import ImgfsModel

/// A fixed set of threads of the shared tier's own, running queued jobs in FIFO order.
///
/// Guarantees: jobs run only on these threads (never on a FUSE thread or the fetching thread), at most `count` at
/// once; `submit` never blocks. The threads live as long as the process (a mount has one set).
public final class SharedTierWorkers: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
    }

    private let queue = Locked(Queue())
    private let signal = DispatchSemaphore(value: 0)

    /// Starts `count` threads named `name-N`.
    public init(name: String, count: Int) {
        for index in 0..<max(1, count) {
            let thread = Thread { [self] in runJobs() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Queues `job`; returns at once.
    public func submit(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.jobs.append(job) }
        signal.signal()
    }

    private func runJobs() {
        while true {
            signal.wait()
            let job = queue.withLock { queue -> (@Sendable () -> Void)? in
                guard queue.head < queue.jobs.count else { return nil }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head > 1024, queue.head * 2 > queue.jobs.count {
                    queue.jobs.removeFirst(queue.head)
                    queue.head = 0
                }
                return job
            }
            job?()
        }
    }
}
