import ImgfsCore

/// The running count of an `imgfs prefetch` batch, shared by its reader threads and the thread that draws progress.
final class PrefetchTally: Sendable {
    /// One URL that could not be warmed, with its place in the list.
    struct Failure: Sendable {
        let index: Int
        let url: String
        let error: PrefetchError
    }

    /// What the lock guards.
    private struct State {
        var done = 0
        var failures: [Failure] = []
        var bytes = 0
    }

    /// How many URLs the batch holds.
    let total: Int
    private let start = ContinuousClock.now
    private let state = Locked(State())

    init(total: Int) {
        self.total = total
    }

    /// Counts `count` more bytes read.
    func add(bytes count: Int) {
        state.withLock { $0.bytes += count }
    }

    /// Counts one URL as finished, failed with `error` unless nil.
    func finish(index: Int, url: String, error: PrefetchError?) {
        state.withLock { state in
            state.done += 1
            if let error { state.failures.append(Failure(index: index, url: url, error: error)) }
        }
    }

    /// Where the batch stands now.
    func snapshot() -> ProgressLine {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return state.withLock { state in
            ProgressLine(
                total: total, done: state.done, failed: state.failures.count, bytes: state.bytes,
                seconds: seconds)
        }
    }

    /// The failures so far, in the order of the list.
    func failures() -> [Failure] {
        state.withLock { $0.failures }.sorted { $0.index < $1.index }
    }
}
