import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers

/// A ``JobRunning`` that runs each item at once on the caller's thread: the repository's disk writes are then done
/// when the transfer's completion returns, so tests need not wait for them.
struct InlineWorker: JobRunning {
    func submit(_ work: @escaping @Sendable () -> Void) { work() }
    func drain() {}
}
