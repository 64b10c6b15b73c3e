import Foundation
import ImgfsModel
import ImgfsStore

/// Observes an origin transfer for a ``SharedTierTransfer``: passes the events on and, when this mount holds the
/// lease, copies the body into a ``SharedTierPublication``.
///
/// When the transfer already delivered part of the body from the store (the mount that was publishing it died or
/// the store failed), the origin body's first bytes are not delivered again but compared with what was: a body that
/// differs in length, validator or those bytes fails the transfer (it changed at the origin meanwhile), so a reader
/// never gets a mixture of two versions.
final class SharedTierTee: TransferObserving, Sendable {
    private struct State {
        var received = 0
        var prefixChecksum: UInt32 = 0
    }

    private let transfer: SharedTierTransfer
    private let publication: SharedTierPublication?
    /// What was delivered before the origin took over.
    private let skip: Int
    private let expectedPrefix: UInt32
    private let earlierHead: ResponseHead?
    private let state = Locked(State())

    init(transfer: SharedTierTransfer, publication: SharedTierPublication?) {
        self.transfer = transfer
        self.publication = publication
        skip = transfer.delivered
        expectedPrefix = transfer.prefixChecksum
        earlierHead = transfer.head
    }

    /// The fleet waits for a body this mount publishes; otherwise, whoever waits for the transfer.
    var isWanted: Bool { publication != nil || transfer.isWanted }

    func transferDidReceive(head: ResponseHead) -> Bool {
        if let earlierHead {
            let sameLength =
                earlierHead.contentLength == nil || head.contentLength == nil
                || earlierHead.contentLength == head.contentLength
            let sameTag = earlierHead.etag == nil || head.etag == nil || earlierHead.etag == head.etag
            guard head.status == 200, sameLength, sameTag else { return changed() }
        } else if !transfer.deliver(head: head) {
            publication?.abandon()
            return false
        }
        publication?.begin(head: head)
        return true
    }

    func transferDidReceive(bytes: UnsafeRawBufferPointer) -> Bool {
        let (repeated, matches) = state.withLock { state -> (Int, Bool) in
            let repeated = max(0, min(bytes.count, skip - state.received))
            if repeated > 0 {
                state.prefixChecksum = CRC32.update(
                    state.prefixChecksum,
                    with: UnsafeRawBufferPointer(rebasing: bytes[..<repeated]))
            }
            state.received += bytes.count
            return (repeated, state.received < skip || state.prefixChecksum == expectedPrefix)
        }
        guard matches else { return changed() }
        // Published only once this mount's own checks (image signature, size cap) accepted the bytes.
        if repeated < bytes.count, !transfer.deliver(bytes: UnsafeRawBufferPointer(rebasing: bytes[repeated...])) {
            publication?.abandon()
            return false
        }
        publication?.append(bytes)
        return true
    }

    /// A retry that could not resume starts the body again: what was published of the first body is abandoned and the
    /// transfer fails (the shared tier never passes on two bodies as one; the next access fetches again).
    func transferDidRestart(head: ResponseHead) -> Bool {
        changed()
    }

    func transferDidComplete(error: FetchError?) {
        let short = state.withLock { $0.received < skip }
        if error == nil && short { return _ = changed() }
        publication?.finish(error: error)
        transfer.complete(error)
    }

    private func changed() -> Bool {
        publication?.abandon()
        transfer.complete(.transport("the image changed at the origin while it was being shared between mounts"))
        return false
    }
}
