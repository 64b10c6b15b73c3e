import CFuse
import ImgfsModel

/// Asks the kernel whether it still holds the first page of a file in its page cache (`FUSE_NOTIFY_RETRIEVE`, which
/// answers with the pages present from an offset up to the first missing one).
///
/// Guarantees: each probe's answer is delivered exactly once: true when the page is cached, false when it is not or
/// when the kernel cannot be asked (the inode is not in its cache: then neither are its pages).
final class PageCacheProbe: Sendable {
    private let session: FuseSessionPointer
    private let pending = Locked<(next: UInt, answers: [UInt: @Sendable (Bool) -> Void])>((1, [:]))

    init(session: FuseSessionPointer) {
        self.session = session
    }

    /// Calls `answer` with whether page 0 of `inode` is in the page cache, once the kernel said so.
    func firstPageCached(_ inode: UInt64, answer: @escaping @Sendable (Bool) -> Void) {
        let cookie = pending.withLock { state -> UInt in
            defer { state.next += 1 }
            state.answers[state.next] = answer
            return state.next
        }
        let result = fuse_lowlevel_notify_retrieve(
            session.raw, fuse_ino_t(inode), 4096, 0,
            UnsafeMutableRawPointer(bitPattern: cookie))
        if result != 0, let answer = take(cookie) { answer(false) }
    }

    /// The kernel's answer to the probe `cookie` (from the retrieve_reply callback): `bytes` cached from offset 0.
    func received(cookie: UnsafeMutableRawPointer?, bytes: Int) {
        guard let cookie, let answer = take(UInt(bitPattern: cookie)) else { return }
        answer(bytes > 0)
    }

    private func take(_ cookie: UInt) -> (@Sendable (Bool) -> Void)? {
        pending.withLock { $0.answers.removeValue(forKey: cookie) }
    }
}
