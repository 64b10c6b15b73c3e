import ImgfsModel
import ImgfsPipeline
import Synchronization

/// A fake ImageFetching that starts nothing: tests drive each transfer's observer by hand.
final class ManualFetcher: ImageFetching, @unchecked Sendable {
    struct Started {
        let request: FetchRequest
        let observer: any TransferObserving
        var url: ImageURL { request.url }
    }

    private let started = Mutex<[Started]>([])
    private let cancelled = Mutex<Int>(0)
    private let restWantedCalls = Mutex<Int>(0)

    func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle {
        started.withLock { $0.append(Started(request: request, observer: observer)) }
        return Handle(fetcher: self)
    }

    var transfers: [Started] { started.withLock { $0 } }
    var cancelCount: Int { cancelled.withLock { $0 } }
    /// How often a handle was told the rest is wanted (``TransferHandle/restWanted()``).
    var restWantedCount: Int { restWantedCalls.withLock { $0 } }

    /// Plays a whole successful response on transfer `index`.
    func respond(
        _ index: Int = 0, body: [UInt8], contentLength: Bool = true, etag: String? = nil, cacheControl: String? = nil
    ) {
        let observer = transfers[index].observer
        var head = ResponseHead(
            status: 200, contentLength: contentLength ? body.count : nil, contentType: "image/png", etag: etag)
        head.cacheControl = cacheControl
        _ = observer.transferDidReceive(head: head)
        body.withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
    }

    /// Answers the probe `index` as libcurl does: a 206 of its first bytes whose head carries the whole `body`'s size
    /// (Content-Range's total) and `etag`, then the end of the answer.
    func respondProbe(_ index: Int, body: [UInt8], etag: String? = "\"v1\"") {
        let observer = transfers[index].observer
        let count = min(body.count, transfers[index].request.probeBytes ?? body.count)
        var head = ResponseHead(status: 206, contentLength: body.count, contentType: "image/png", etag: etag)
        head.contentRange = ContentRange(first: 0, last: count - 1, total: body.count)
        _ = observer.transferDidReceive(head: head)
        body[..<count].withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
    }

    /// Answers the continuation `index` with a 206 of the rest of `body` (libcurl hands over its bytes alone).
    func respondRest(_ index: Int, body: [UInt8]) {
        let observer = transfers[index].observer
        body[transfers[index].request.continuedFrom...].withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
    }

    /// Answers the continuation `index` with a 200 of the whole `body` (the validator no longer matched).
    func respondRestart(_ index: Int, body: [UInt8], etag: String) {
        let observer = transfers[index].observer
        let head = ResponseHead(status: 200, contentLength: body.count, contentType: "image/png", etag: etag)
        guard observer.transferDidRestart(head: head) else { return }
        body.withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
    }

    /// Answers transfer `index` (a revalidation) with 304 Not Modified.
    func respondNotModified(_ index: Int) {
        let observer = transfers[index].observer
        _ = observer.transferDidReceive(head: ResponseHead(status: 304))
        observer.transferDidComplete(error: nil)
    }

    /// Fails transfer `index`.
    func fail(_ index: Int, _ error: FetchError) {
        transfers[index].observer.transferDidComplete(error: error)
    }

    private struct Handle: TransferHandle {
        let fetcher: ManualFetcher
        func cancel() { fetcher.cancelled.withLock { $0 += 1 } }
        func restWanted() { fetcher.restWantedCalls.withLock { $0 += 1 } }
    }
}

/// Collects asynchronous replies so a test can look at them.
final class Replies<Value: Sendable>: @unchecked Sendable {
    private let values = Mutex<[Value]>([])

    var all: [Value] { values.withLock { $0 } }

    func record(_ value: Value) { values.withLock { $0.append(value) } }
}
