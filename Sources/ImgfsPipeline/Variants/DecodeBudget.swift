import Foundation
import ImgfsModel

/// Admits the decodes that cannot stream (``DecodeCost``) against a budget of memory, so that thumbnails of images
/// within `--tune max-pixels` cannot together hold more than it.
///
/// Guarantees: a decode is admitted only when its cost and those of the decodes admitted and not yet released add up
/// to at most the limit given (decodes admitted under a larger limit are not called off when it shrinks); a cost over
/// the limit is refused at once; a decode that fits but not now is parked, not waited for: its `retry` runs (once)
/// when an admitted decode is released. A streaming decode (cost 0) is always admitted and never counted.
public final class DecodeBudget: Sendable {
    /// What ``admit(_:limit:retry:)`` decided.
    public enum Admission: Equatable, Sendable {
        /// Decode now; call ``release(_:)`` with the cost afterwards.
        case admitted
        /// More than the whole limit: it can never be decoded under it.
        case refused
        /// Not now: `retry` runs when a decode ends.
        case parked
    }

    private struct State {
        var inUse = 0
        var parked: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    /// A budget with nothing admitted.
    public init() {}

    /// Admits a decode of `cost` bytes under `limit`, or parks `retry` until a running decode ends.
    public func admit(_ cost: Int, limit: Int, retry: @escaping @Sendable () -> Void) -> Admission {
        guard cost > 0 else { return .admitted }
        guard cost <= limit else { return .refused }
        return state.withLock { state in
            if state.inUse <= limit - cost {
                state.inUse += cost
                return .admitted
            }
            state.parked.append(retry)
            return .parked
        }
    }

    /// Ends an admitted decode of `cost` bytes; the parked decodes try again.
    public func release(_ cost: Int) {
        guard cost > 0 else { return }
        let parked = state.withLock { state -> [@Sendable () -> Void] in
            state.inUse = max(0, state.inUse - cost)
            defer { state.parked = [] }
            return state.parked
        }
        for retry in parked { retry() }
    }

    /// Bytes admitted and not released.
    public var inUse: Int { state.withLock { $0.inUse } }

    /// Decodes parked now.
    public var parkedCount: Int { state.withLock { $0.parked.count } }
}
