import CFuse
import Glibc
import ImgfsModel
import ImgfsPipeline

/// Sends notices to the kernel (invalidations, and bytes to put in its page cache) from any thread, until the session
/// closes.
///
/// Guarantees: the session is never used after ``close()`` returns. Notices do not wait for each other: every open
/// of a small image stores its bytes here, from up to all the FUSE threads at once, and a store is a copy into the
/// page cache that took its turn under a plain lock before (libfuse sends each notice in one write of its own, so
/// they may overlap).
final class SessionNotifier: @unchecked Sendable {
    private let session: OpaquePointer
    /// Shared by the notices, exclusive for ``close()``.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Set once, under the exclusive lock.
    private var closed = false

    init(session: OpaquePointer) {
        self.session = session
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Drops the kernel's cached pages and attributes of `inode`.
    func invalidate(_ inode: UInt64) {
        withOpenSession { session in
            _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(inode), 0, 0)
        }
    }

    /// Puts `slice` (from offset 0) into the kernel's page cache of `inode`, marked up to date.
    func store(_ inode: UInt64, _ slice: ImageSlice) {
        withOpenSession { session in
            slice.withSegments { pieces in
                if pieces.count == 1 {
                    Self.send(session, inode, pieces[0])
                } else {
                    let joined = pieces.flatMap { Array($0) }
                    joined.withUnsafeBytes { Self.send(session, inode, $0) }
                }
            }
        }
    }

    /// Stops the notices: waits for those being sent; later ones are dropped.
    func close() {
        pthread_rwlock_wrlock(lock)
        closed = true
        pthread_rwlock_unlock(lock)
    }

    private func withOpenSession(_ body: (OpaquePointer) -> Void) {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        if !closed { body(session) }
    }

    private static func send(_ session: OpaquePointer, _ inode: UInt64, _ bytes: UnsafeRawBufferPointer) {
        var vector = fuse_bufvec()
        vector.count = 1
        vector.idx = 0
        vector.off = 0
        vector.buf.size = bytes.count
        vector.buf.flags = fuse_buf_flags(rawValue: 0)
        vector.buf.mem = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        vector.buf.fd = -1
        vector.buf.pos = 0
        _ = fuse_lowlevel_notify_store(session, fuse_ino_t(inode), 0, &vector, fuse_buf_copy_flags(rawValue: 0))
    }
}
