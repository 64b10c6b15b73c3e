import Foundation
import ImgfsModel
import Logging

/// Whether the shared store is usable, with the counters of the tier.
///
/// Guarantees: a failing store is reported in the log once when it fails and once when it answers again (not per
/// request); while it is down it is asked at most once per `retryInterval` (the call that probes it), every other call
/// fails at once with ``SharedStoreError/unavailable(_:)`` so no request waits for a store known to be down. A store
/// that answers but refuses writes (full: `OOM command not allowed`) stays in use for reads; that too is logged once,
/// and once when a write succeeds again.
public final class SharedTierHealth: Sendable {
    private struct State {
        var downSince: Date?
        var nextProbe = Date.distantPast
        /// Whether the last write was refused with an error reply.
        var refusingWrites = false
        var counters = SharedTierCounters()
    }

    private let state = Locked(State())
    private let logger: Logger
    private let retryInterval: TimeInterval
    private let now: @Sendable () -> Date

    /// A health that starts up and tries the store again at most every `retryInterval` seconds after a failure,
    /// reading the time from `now`.
    public init(logger: Logger, retryInterval: TimeInterval = 1, now: @escaping @Sendable () -> Date = { Date() }) {
        self.logger = logger
        self.retryInterval = retryInterval
        self.now = now
    }

    /// Whether a new transfer should ask the store (false while it is down and not due for a probe).
    public var isUsable: Bool {
        state.withLock { $0.downSince == nil || now() >= $0.nextProbe }
    }

    /// Runs one store operation: refused at once while the store is down (except one probe per interval); a failure
    /// marks it down, a success after an outage marks it up again.
    public func run<Result>(_ operation: () throws(SharedStoreError) -> Result) throws(SharedStoreError) -> Result {
        try run(write: false, operation)
    }

    /// ``run(_:)`` for a write: an error reply (a full store) does not make the store unusable for reads.
    public func runWrite<Result>(
        _ operation: () throws(SharedStoreError) -> Result
    ) throws(SharedStoreError) -> Result {
        try run(write: true, operation)
    }

    private func run<Result>(
        write: Bool,
        _ operation: () throws(SharedStoreError) -> Result
    ) throws(SharedStoreError) -> Result {
        let allowed = state.withLock { state -> Bool in
            guard state.downSince != nil else { return true }
            guard now() >= state.nextProbe else { return false }
            state.nextProbe = now() + retryInterval
            return true
        }
        guard allowed else { throw .unavailable("down since the last failure") }
        do throws(SharedStoreError) {
            let result = try operation()
            recovered()
            if write { writesAccepted() }
            return result
        } catch .refused(let reason) where write {
            writeRefused(reason)
            throw .refused(reason)
        } catch {
            failed(error)
            throw error
        }
    }

    private func writeRefused(_ reason: String) {
        let first = state.withLock { state -> Bool in
            state.counters.errors += 1
            defer { state.refusingWrites = true }
            return !state.refusingWrites
        }
        if first { logger.warning("shared cache refuses writes (\(reason)); nothing is shared until it accepts them") }
    }

    private func writesAccepted() {
        let was = state.withLock { state -> Bool in
            defer { state.refusingWrites = false }
            return state.refusingWrites
        }
        if was { logger.notice("shared cache accepts writes again") }
    }

    /// Adds to the counters.
    public func count(_ change: (inout SharedTierCounters) -> Void) {
        state.withLock { change(&$0.counters) }
    }

    /// A snapshot of the counters.
    public var counters: SharedTierCounters {
        state.withLock { state in
            var counters = state.counters
            counters.up = state.downSince == nil ? 1 : 0
            return counters
        }
    }

    private func failed(_ error: SharedStoreError) {
        let first = state.withLock { state -> Bool in
            state.counters.errors += 1
            state.nextProbe = now() + retryInterval
            guard state.downSince == nil else { return false }
            state.downSince = now()
            state.counters.outages += 1
            return true
        }
        if first {
            logger.warning("shared cache unusable (\(error)); fetching from the origin until it answers again")
        }
    }

    private func recovered() {
        let since = state.withLock { state -> Date? in
            defer { state.downSince = nil }
            return state.downSince
        }
        if let since {
            let seconds = Int(now().timeIntervalSince(since).rounded())
            logger.notice("shared cache answers again after \(seconds) s; using it")
        }
    }
}
