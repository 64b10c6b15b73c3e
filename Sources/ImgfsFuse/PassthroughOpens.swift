import CFuseShims
import Foundation
import ImgfsModel
import ImgfsPipeline
import Logging

/// Decides, per open of an image, whether the kernel reads it through the page cache (READ requests to imgfs) or by
/// itself from a registered file holding the image (FUSE passthrough), and keeps the kernel's rule for mixing them:
/// while a file of an inode is open with passthrough, every open of that inode must use passthrough with the same
/// backing file, and an inode with files open through the page cache gets no passthrough open (the kernel fails such
/// an open with EIO).
///
/// Guarantees: an open is counted before its answer is sent and uncounted at its release, which the kernel sends
/// after it has let go of the file, so an inode's mode here never ends before the kernel's does; a backing id is
/// registered once per inode while passthrough opens of it exist and dropped after the last one is released; a later
/// open of an inode whose bytes changed while passthrough opens existed is answered with passthrough too, but with
/// its reads sent to imgfs (the new bytes); once the kernel refuses a registration for lack of privilege
/// (CAP_SYS_ADMIN), no other is attempted.
final class PassthroughOpens: Sendable {
    /// How one open is answered.
    enum Mode: Equatable {
        case pageCache
        case passthrough(backingId: Int32, readsFromDaemon: Bool)
    }

    private enum InodeMode {
        case pageCache(opens: Int)
        /// `body` is held so that its identity cannot be taken by a later body while the kernel reads its file.
        case passthrough(opens: Int, backingId: Int32, body: KernelReadableBody)
    }

    private let session: FuseSessionPointer
    private let availability: PassthroughAvailability
    private let logger: Logger
    private let modes = Locked<[UInt64: InodeMode]>([:])

    init(session: FuseSessionPointer, availability: PassthroughAvailability, logger: Logger) {
        self.session = session
        self.availability = availability
        self.logger = logger
    }

    /// Whether opens may use passthrough now (``PassthroughAvailability/isUsable``).
    var isUsable: Bool { availability.isUsable }

    /// Whether an open of `inode` that found its image whole in a file would be the one to choose the inode's mode
    /// (no open of it is counted): the caller may first find out whether the kernel still caches its pages.
    func choosesMode(_ inode: UInt64) -> Bool {
        availability.isUsable && modes.withLock { $0[inode] == nil }
    }

    /// Counts an open of `inode` and says how to answer it; `body` is the image's file when the open found it whole.
    /// With `pagesCached` (the kernel still holds the image's pages), an inode without open files stays with the page
    /// cache: its reads are served from there without a copy more, and a passthrough open would throw those pages
    /// away in the opener's time.
    func begin(_ inode: UInt64, body: KernelReadableBody?, pagesCached: Bool = false) -> Mode {
        var refusal: Int32?
        let mode = modes.withLock { modes -> Mode in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = .pageCache(opens: opens + 1)
                return .pageCache
            case .passthrough(let opens, let backingId, let registered)?:
                modes[inode] = .passthrough(opens: opens + 1, backingId: backingId, body: registered)
                return .passthrough(backingId: backingId, readsFromDaemon: body?.identity != registered.identity)
            case nil:
                if let body, !pagesCached, availability.isUsable {
                    let backingId = imgfs_fuse_backing_open(session.raw, body.descriptor)
                    if backingId > 0 {
                        modes[inode] = .passthrough(opens: 1, backingId: backingId, body: body)
                        return .passthrough(backingId: backingId, readsFromDaemon: false)
                    }
                    refusal = -backingId
                }
                modes[inode] = .pageCache(opens: 1)
                return .pageCache
            }
        }
        if let refusal { refused(refusal) }
        return mode
    }

    /// An open of `inode` ended: released by the kernel, or its answer never reached the kernel.
    func end(_ inode: UInt64) {
        let unregister = modes.withLock { modes -> Int32? in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = opens > 1 ? .pageCache(opens: opens - 1) : nil
                return nil
            case .passthrough(let opens, let backingId, let registered)?:
                if opens > 1 {
                    modes[inode] = .passthrough(opens: opens - 1, backingId: backingId, body: registered)
                    return nil
                }
                modes[inode] = nil
                // Dropped under the lock: a later open of this inode registers anew only after this id is gone.
                let result = imgfs_fuse_backing_close(session.raw, backingId)
                return result == 0 ? nil : -result
            case nil:
                return nil
            }
        }
        if let unregister {
            logger.warning("cannot drop a passthrough registration: \(String(cString: strerror(unregister)))")
        }
    }

    private func refused(_ error: Int32) {
        if error == EPERM || error == EACCES {
            if availability.markRefused() {
                logger.notice(
                    """
                    the kernel lets only a privileged daemon (CAP_SYS_ADMIN) register files for passthrough; large \
                    images are read through imgfs instead
                    """
                )
            }
        } else {
            logger.warning("cannot register an image for passthrough: \(String(cString: strerror(error)))")
        }
    }
}
