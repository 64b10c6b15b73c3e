import ImgfsCore
import Synchronization

/// A fake ImageFetching that starts nothing: tests drive each transfer's observer by hand.
final class ManualFetcher: ImageFetching, @unchecked Sendable {
    struct Started {
        let url: ImageURL
        let observer: any TransferObserving
    }

    private let started = Mutex<[Started]>([])
    private let cancelled = Mutex<Int>(0)

    func start(_ url: ImageURL, observer: any TransferObserving) -> any TransferHandle {
        started.withLock { $0.append(Started(url: url, observer: observer)) }
        return Handle(fetcher: self)
    }

    var transfers: [Started] { started.withLock { $0 } }
    var cancelCount: Int { cancelled.withLock { $0 } }

    /// Plays a whole successful response on transfer `index`.
    func respond(_ index: Int = 0, body: [UInt8], contentLength: Bool = true) {
        let observer = transfers[index].observer
        observer.transferDidReceive(head: ResponseHead(status: 200, contentLength: contentLength ? body.count : nil,
                                                       contentType: "image/png"))
        body.withUnsafeBytes { observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
    }

    private struct Handle: TransferHandle {
        let fetcher: ManualFetcher
        func cancel() { fetcher.cancelled.withLock { $0 += 1 } }
    }
}

/// Collects asynchronous replies so a test can look at them.
final class Replies<Value: Sendable>: @unchecked Sendable {
    private let values = Mutex<[Value]>([])

    var all: [Value] { values.withLock { $0 } }

    func record(_ value: Value) { values.withLock { $0.append(value) } }
}
