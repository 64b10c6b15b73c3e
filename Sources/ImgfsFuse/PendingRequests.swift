import CFuse
import ImgfsModel
import ImgfsPipeline

/// Requests that wait for the network, so that an interrupt (a reader hit by Ctrl-C or killed) is answered with
/// EINTR at once instead of when the origin answers.
///
/// Guarantees: each tracked request is answered exactly once, either by the code that finishes it (which gets the
/// request back from ``finish(_:)``) or by the interrupt; the interrupt callback is registered without any lock held,
/// since libfuse may call it inside the registering call. An interrupt that comes before the operation has started
/// waiting (before ``started(_:)``) has its `onInterrupt` run again once it has, so a transfer the operation started
/// or joined meanwhile is seen abandoned.
final class PendingRequests: Sendable {
    private struct Pending {
        let request: ParkedRequest
        let interest: Interest
        let onInterrupt: @Sendable () -> Void
        var started = false
    }

    private struct Table {
        var next: UInt = 1
        var live: [UInt: Pending] = [:]
        /// What to run again once the operation of a request interrupted before it started is waiting.
        var interruptedEarly: [UInt: @Sendable () -> Void] = [:]
    }

    private let table = Locked(Table())

    /// Starts tracking `request`; returns the ticket to hand to ``finish(_:)`` and the interest to pass down, which an
    /// interrupt withdraws before calling `onInterrupt`.
    func track(
        _ request: consuming Request,
        onInterrupt: @escaping @Sendable () -> Void
    ) -> (ticket: UInt, interest: Interest) {
        let interest = Interest()
        let raw = request.withRaw { $0 }
        let parked = request.park()
        let ticket = table.withLock { table in
            let ticket = table.next
            table.next += 1
            table.live[ticket] = Pending(request: parked, interest: interest, onInterrupt: onInterrupt)
            return ticket
        }
        fuse_req_interrupt_func(raw, pendingRequestInterrupted, UnsafeMutableRawPointer(bitPattern: ticket))
        return (ticket, interest)
    }

    /// The request to answer, or nil when an interrupt has answered it already.
    func finish(_ ticket: UInt) -> Request? {
        guard let pending = table.withLock({ $0.live.removeValue(forKey: ticket) }) else { return nil }
        return Request(unparking: pending.request)
    }

    /// The operation of `ticket` has registered whatever it waits for. If an interrupt came before that, its
    /// `onInterrupt` runs again now.
    func started(_ ticket: UInt) {
        let again = table.withLock { table -> (@Sendable () -> Void)? in
            if table.live[ticket] != nil {
                table.live[ticket]?.started = true
                return nil
            }
            return table.interruptedEarly.removeValue(forKey: ticket)
        }
        again?()
    }

    /// Answers the request with EINTR unless it was answered already, then tells whoever tracked it.
    func interrupt(_ ticket: UInt) {
        let interrupted = table.withLock { table -> Pending? in
            guard let pending = table.live.removeValue(forKey: ticket) else { return nil }
            if !pending.started { table.interruptedEarly[ticket] = pending.onInterrupt }
            return pending
        }
        guard let pending = interrupted else { return }
        pending.interest.withdraw()
        Request(unparking: pending.request).fail(.interrupted)
        pending.onInterrupt()
    }
}

private func pendingRequestInterrupted(_ req: fuse_req_t?, _ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let operations = Unmanaged<FuseOperations>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    operations.pending.interrupt(UInt(bitPattern: data))
}
