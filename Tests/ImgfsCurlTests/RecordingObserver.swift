import Dispatch
import Foundation
import ImgfsModel
import ImgfsPipeline

/// A transfer observer that records what a fetcher delivers, for tests of the curl layer alone.
final class RecordingObserver: TransferObserving {
    struct Events {
        var heads: [ResponseHead] = []
        var body: [UInt8] = []
        var completions: [FetchError?] = []
        /// The name of the thread each head was delivered on.
        var threads: [String] = []
        /// The name of the thread each completion was delivered on.
        var completionThreads: [String] = []
    }

    let events = Locked(Events())
    private let done = DispatchSemaphore(value: 0)
    /// What ``wantsRest`` answers (a lookup's probe pauses after its first bytes while it is false).
    let restWanted = Locked(true)

    var wantsRest: Bool { restWanted.withLock { $0 } }

    func transferDidReceive(head: ResponseHead) -> Bool {
        let thread = Self.threadName()
        events.withLock {
            $0.heads.append(head)
            $0.threads.append(thread)
        }
        return true
    }

    func transferDidReceive(bytes: UnsafeRawBufferPointer) -> Bool {
        events.withLock { $0.body.append(contentsOf: bytes) }
        return true
    }

    func transferDidComplete(error: FetchError?) {
        let thread = Self.threadName()
        events.withLock {
            $0.completions.append(error)
            $0.completionThreads.append(thread)
        }
        done.signal()
    }

    /// The completion's error (nil: success), or `.timedOut` when none came within `seconds`.
    func waitForCompletion(seconds: Double = 20) -> FetchError? {
        guard done.wait(timeout: .now() + seconds) == .success else { return .timedOut("no completion in the test") }
        return events.withLock { $0.completions.first ?? nil }
    }

    /// The calling thread's system name.
    static func threadName() -> String {
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
        return comm.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var body: [UInt8] { events.withLock { $0.body } }
    var completionCount: Int { events.withLock { $0.completions.count } }
}
