/// Receives the events of one transfer, in order: at most one head, then body bytes, then exactly one completion.
///
/// Implementations must be thread safe: events may arrive on any thread (never two at once for one transfer).
public protocol TransferObserving: AnyObject, Sendable {
    /// The final response is a 2xx with this head; body bytes follow.
    func transferDidReceive(head: ResponseHead)
    /// More body bytes, valid only during the call.
    func transferDidReceive(bytes: UnsafeRawBufferPointer)
    /// The transfer ended: nil when the whole body arrived, else why not.
    func transferDidComplete(error: FetchError?)
}

/// A transfer that can be called off.
public protocol TransferHandle: Sendable {
    /// Stops the transfer; its observer then completes with ``FetchError/cancelled`` unless it already completed.
    func cancel()
}

/// Starts HTTP(S) GET transfers.
///
/// Implementations must be thread safe, must not block the caller on the network, and must complete every transfer
/// they start exactly once (also when shut down). A final non-2xx status completes with ``FetchError/httpStatus(_:)``
/// and no head.
public protocol ImageFetching: Sendable {
    func start(_ url: ImageURL, observer: any TransferObserving) -> any TransferHandle
}
