import Foundation
import ImgfsModel

/// Receives the events of one transfer, in order: at most one head, then body bytes, then exactly one completion.
///
/// Implementations must be thread safe: events may arrive on any thread (never two at once for one transfer).
public protocol TransferObserving: AnyObject, Sendable {
    /// The final response is a 2xx (or a 304 to a conditional request) with this head; body bytes follow. Returns false
    /// to stop the transfer (the observer has then failed it itself; the completion that follows does not matter).
    @discardableResult
    func transferDidReceive(head: ResponseHead) -> Bool
    /// More body bytes, valid only during the call. Returns false to stop the transfer, as above.
    @discardableResult
    func transferDidReceive(bytes: UnsafeRawBufferPointer) -> Bool
    /// A retry could not resume: the body starts again from byte 0 with a new response `head` (its bytes follow).
    /// The observer must never let readers see a mix of the two bodies; it returns false when it cannot take the new
    /// body (and has then failed the transfer itself).
    func transferDidRestart(head: ResponseHead) -> Bool
    /// The transfer ended: nil when the whole body arrived, else why not.
    func transferDidComplete(error: FetchError?)
    /// Whether anyone still waits for this transfer. A fetcher may call off a transfer nobody wants when a transfer
    /// somebody waits for needs its place; asked on any thread.
    var isWanted: Bool { get }
}

extension TransferObserving {
    /// By default every transfer is wanted until it ends.
    public var isWanted: Bool { true }

    /// By default a body cannot start again: the observer fails with ``FetchError/changed``.
    public func transferDidRestart(head: ResponseHead) -> Bool {
        transferDidComplete(error: .changed("the retry got a new body and this observer cannot start again"))
        return false
    }
}

/// A transfer that can be called off.
public protocol TransferHandle: Sendable {
    /// Stops the transfer; its observer then completes with ``FetchError/cancelled`` unless it already completed.
    func cancel()
    /// Raises a transfer still waiting for admission to `priority` (a reader joined it); no effect once it started.
    func promote(to priority: FetchPriority)
}

extension TransferHandle {
    /// Does nothing: a fetcher without an admission queue starts every transfer at once.
    public func promote(to priority: FetchPriority) {}
}

/// One GET: the URL and, for a revalidation, the validators of the cached copy.
public struct FetchRequest: Sendable, Equatable {
    /// The URL to get, without fragment.
    public var url: ImageURL
    /// Sent as If-None-Match.
    public var etag: String?
    /// Sent as If-Modified-Since.
    public var lastModified: Date?
    /// Seconds to hold the request before sending it; a cancel meanwhile stops it unsent.
    public var holdSeconds = 0.0
    /// Its class in the fetcher's admission queue.
    public var priority: FetchPriority
    /// The request rules it was made under (headers, cookie file, refusal, transfers per host): a reload of the rules
    /// changes requests made afterwards only.
    public var rules = RequestRules.empty
    /// For a probe: how many first bytes to ask for (`Range: bytes=0-…`); a server that ignores Range is cut off
    /// after them (when it announced a Content-Length; else the whole body is taken, since its size is needed).
    public var probeBytes: Int?
    /// For the rest of a probed image: the probe's head, whose total size and strong validator the continuation
    /// (`Range: bytes=N-` with `If-Range`) must match; a 200 instead starts the body again from byte 0.
    public var continuedHead: ResponseHead?
    /// For the rest of a probed image: how many bytes the probe holds (N).
    public var continuedFrom = 0

    /// A GET of `url`, conditional when a validator is given, under no request rules.
    public init(url: ImageURL, etag: String? = nil, lastModified: Date? = nil, priority: FetchPriority = .waited) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.priority = priority
    }

    /// Whether this is a conditional request (a 304 answer is then a success).
    public var isConditional: Bool { etag != nil || lastModified != nil }
}

/// Starts HTTP(S) GET transfers.
///
/// Implementations must be thread safe, must not block the caller on the network, and must complete every transfer
/// they start exactly once (also when shut down). A final 2xx status, or 304 for a conditional request, delivers its
/// head (a 304 has no body); any other final status completes with ``FetchError/httpStatus(_:)`` and no head.
public protocol ImageFetching: Sendable {
    func start(_ request: FetchRequest, observer: any TransferObserving) -> any TransferHandle
}
