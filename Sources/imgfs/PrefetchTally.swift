import ImgfsModel

/// The running count of an `imgfs prefetch` batch, shared by its reader threads and the thread that draws progress.
///
/// Guarantees: the bytes expected are known only while every URL not finished yet has a known size (its file was
/// opened and its size read, which is the response's Content-Length); a finished URL counts the bytes actually read.
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
        /// Bytes read by the finished URLs.
        var finishedBytes = 0
        /// The URLs being read whose size is known, by index: the size.
        var sizes: [Int: Int] = [:]
        /// The URLs being read, by index: the bytes read so far.
        var reading: [Int: Int] = [:]
    }

    /// How many URLs the batch holds.
    let total: Int
    private let start = ContinuousClock.now
    private let state = Locked(State())

    init(total: Int) {
        self.total = total
    }

    /// URL `index`'s file has `bytes` bytes.
    func sized(index: Int, bytes: Int) {
        state.withLock { $0.sizes[index] = bytes }
    }

    /// Counts `count` more bytes read of URL `index`.
    func add(index: Int, bytes count: Int) {
        state.withLock { state in
            state.bytes += count
            state.reading[index, default: 0] += count
        }
    }

    /// Counts URL `index` as finished, failed with `error` unless nil.
    func finish(index: Int, url: String, error: PrefetchError?) {
        state.withLock { state in
            state.done += 1
            state.finishedBytes += state.reading.removeValue(forKey: index) ?? 0
            state.sizes[index] = nil
            if let error { state.failures.append(Failure(index: index, url: url, error: error)) }
        }
    }

    /// Where the batch stands now.
    func snapshot() -> ProgressLine {
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return state.withLock { state in
            let unknown = total - state.done - state.sizes.count
            let expected = unknown > 0 ? nil : state.finishedBytes + state.sizes.values.reduce(0, +)
            return ProgressLine(
                total: total, done: state.done, failed: state.failures.count, bytes: state.bytes,
                seconds: seconds, pace: .bytes(expected: expected))
        }
    }

    /// The failures so far, in the order of the list.
    func failures() -> [Failure] {
        state.withLock { $0.failures }.sorted { $0.index < $1.index }
    }
}
