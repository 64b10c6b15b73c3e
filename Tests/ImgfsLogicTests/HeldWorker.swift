import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers
import Synchronization

/// A ``JobRunning`` that holds everything submitted until ``drain()`` runs it on the caller's thread: the
/// repository's disk writes then stay queued, not landed, for as long as a test needs.
final class HeldWorker: JobRunning, @unchecked Sendable {
    private let held = Mutex<[@Sendable () -> Void]>([])

    /// How many jobs wait.
    var waiting: Int { held.withLock { $0.count } }

    func submit(_ work: @escaping @Sendable () -> Void) { held.withLock { $0.append(work) } }

    func drain() {
        let jobs = held.withLock { jobs in
            defer { jobs.removeAll() }
            return jobs
        }
        for job in jobs { job() }
    }
}
