import Foundation
import ImgfsModel
import ImgfsStore

/// The transfer a ``SharedTierFetcher`` hands out: passes events to the caller's observer exactly as the protocol
/// requires (at most one head, then bytes, then exactly one completion, nothing after it), whether they come from the
/// store or from the origin, and remembers what was delivered so a source that fails half-way can be replaced.
///
/// Guarantees: the observer completes exactly once; ``cancel()`` completes it with ``FetchError/cancelled`` and
/// stops the origin transfer it may have started; `delivered` and `prefixChecksum` describe exactly the body bytes
/// handed over so far.
final class SharedTierTransfer: TransferHandle, Sendable {
    private struct State {
        var finished = false
        var head: ResponseHead?
        var delivered = 0
        var prefixChecksum: UInt32 = 0
        var digest = SHA256()
        var inner: (any TransferHandle)?
    }

    private let observer: any TransferObserving
    private let state = Locked(State())

    init(observer: any TransferObserving) {
        self.observer = observer
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Whether the caller's observer still wants the transfer.
    var isWanted: Bool { observer.isWanted }
    var head: ResponseHead? { state.withLock { $0.head } }
    var delivered: Int { state.withLock { $0.delivered } }
    var prefixChecksum: UInt32 { state.withLock { $0.prefixChecksum } }
    /// The SHA-256 (hex) of the body bytes read from the store and handed over so far.
    var prefixSHA256: String { Self.hex(state.withLock { $0.digest }.finish()) }

    /// `bytes` in lower-case hexadecimal.
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Hands over the head; false when the transfer is over (finished, or the observer stopped it).
    func deliver(head: ResponseHead) -> Bool {
        guard
            state.withLock({ state -> Bool in
                guard !state.finished, state.head == nil else { return false }
                state.head = head
                return true
            })
        else { return false }
        return observer.transferDidReceive(head: head) || stop()
    }

    /// Hands over body bytes (`fromStore`: read from the store, and added to ``prefixSHA256``); false when the
    /// transfer is over.
    func deliver(bytes: UnsafeRawBufferPointer, fromStore: Bool = false) -> Bool {
        guard
            state.withLock({ state -> Bool in
                guard !state.finished else { return false }
                state.delivered += bytes.count
                state.prefixChecksum = CRC32.update(state.prefixChecksum, with: bytes)
                if fromStore { state.digest.update(bytes) }
                return true
            })
        else { return false }
        return observer.transferDidReceive(bytes: bytes) || stop()
    }

    /// Completes the observer, unless it already completed.
    func complete(_ error: FetchError?) {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { observer.transferDidComplete(error: error) }
    }

    /// The origin transfer now feeding this one (cancelled at once when this one is already over).
    func attach(_ inner: any TransferHandle) {
        let over = state.withLock { state -> Bool in
            state.inner = inner
            return state.finished
        }
        if over { inner.cancel() }
    }

    func cancel() {
        let inner = state.withLock { $0.inner }
        complete(.cancelled)
        inner?.cancel()
    }

    /// The observer returned false: it failed the transfer itself; nothing more is delivered.
    private func stop() -> Bool {
        state.withLock { $0.finished = true }
        return false
    }
}
