import Foundation
import ImgfsModel

/// Runs work in the background, one item at a time, in the order it was submitted: where the repository writes the
/// disk cache.
public protocol SerialWorker: Sendable {
    /// Queues `work`; returns at once.
    func submit(_ work: @escaping @Sendable () -> Void)
    /// Returns once everything submitted before the call has run.
    func drain()
}

/// A ``SerialWorker`` on a private dispatch queue: the default, and what tests use.
public struct DispatchSerialWorker: SerialWorker {
    private let queue: DispatchQueue

    /// A worker on a new serial queue named `label`.
    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Queues `work` on the queue; returns at once.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Returns once everything submitted before the call has run.
    public func drain() {
        queue.sync {}
    }
}
