import CFuse
import ImgfsCore

/// Requests that wait for the network, so that an interrupt (a reader hit by Ctrl-C or killed) is answered with
/// EINTR at once instead of when the origin answers.
///
/// Guarantees: each tracked request is answered exactly once, either by the code that finishes it (which gets the
/// request back from ``finish(_:)``) or by the interrupt; the interrupt callback is registered without any lock held,
/// since libfuse may call it inside the registering call.
final class PendingRequests: Sendable {
    private struct Pending {
        let request: ParkedRequest
        let interest: Interest
        let onInterrupt: @Sendable () -> Void
    }

    private struct Table {
        var next: UInt = 1
        var live: [UInt: Pending] = [:]
    }

    private let table = Locked(Table())

    /// Starts tracking `request`; returns the ticket to hand to ``finish(_:)`` and the interest to pass down, which an
    /// interrupt withdraws before calling `onInterrupt`.
    func track(_ request: consuming Request,
               onInterrupt: @escaping @Sendable () -> Void) -> (ticket: UInt, interest: Interest) {
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

    /// Answers the request with EINTR unless it was answered already, then tells whoever tracked it.
    func interrupt(_ ticket: UInt) {
        guard let pending = table.withLock({ $0.live.removeValue(forKey: ticket) }) else { return }
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
