import ImgfsModel
import ImgfsPipeline

/// The one place that decides how an open file is answered, from what the open found (``ImageFilesystem/OpenFile``):
/// read with direct IO (generated files, placeholders, a large image still arriving and open nowhere else), through
/// the page cache kept across opens, or by the kernel itself from a registered file (FUSE passthrough). The adapter
/// carries the answer out (and hands a preload to the kernel first); it keeps only the calls into libfuse
/// (``BackingFileRegistering``, the page-cache probe).
///
/// It keeps the kernel's rule for mixing the modes: while a file of an inode is open with passthrough, every open of
/// that inode must use passthrough with the same backing file, and an inode with files open through the page cache
/// gets no passthrough open (the kernel fails such an open with EIO).
///
/// Guarantees: an open is counted by ``begin(_:file:pagesCached:bypassWhileArriving:)`` before its answer is sent and
/// uncounted by ``end(_:)`` at its release (which the kernel sends after it has let go of the file, so an inode's mode
/// here never ends before the kernel's does), or when its answer never reached the kernel; a backing id is registered
/// once per inode while passthrough opens of it exist and dropped after the last one ends; a later open of an inode
/// whose bytes changed while passthrough opens existed is answered with passthrough too, but with its reads sent to
/// imgfs (the new bytes). Direct-IO answers of generated files are not counted.
public final class OpenDecision: Sendable {
    /// How one open is answered.
    public enum Answer: Equatable, Sendable {
        /// Every read comes to imgfs, past the page cache.
        case directIO
        /// Reads go through the kernel's page cache, whose pages stay valid across opens (an image's bytes do not
        /// change while its size and mtime do not; a refresh with other bytes invalidates them explicitly).
        case pageCache
        /// The kernel reads the registered file `backingId` by itself; with `readsFromDaemon` (the inode's bytes
        /// changed since it was registered) the reads come to imgfs, past the page cache.
        case passthrough(backingId: Int32, readsFromDaemon: Bool)
    }

    private enum InodeMode {
        case pageCache(opens: Int)
        /// `body` is held so that its identity cannot be taken by a later body while the kernel reads its file.
        case passthrough(opens: Int, backingId: Int32, body: KernelReadableBody)
    }

    private let backing: (any BackingFileRegistering)?
    private let modes = Locked<[UInt64: InodeMode]>([:])

    /// Decides opens; `backing` registers files for passthrough (nil: the mount does not use it).
    public init(backing: (any BackingFileRegistering)? = nil) {
        self.backing = backing
    }

    /// Whether opens may use passthrough now.
    public var passthroughIsUsable: Bool { backing?.isUsable == true }

    /// Whether this open of `inode` would choose the inode's mode with passthrough unless the kernel still caches the
    /// image's pages: the adapter may first find that out and pass it to
    /// ``begin(_:file:pagesCached:bypassWhileArriving:)``.
    public func asksWhetherPagesAreCached(_ inode: UInt64, file: ImageFilesystem.OpenFile) -> Bool {
        !file.directIO && file.kernelReadable != nil && passthroughIsUsable && modes.withLock { $0[inode] == nil }
    }

    /// Counts an open of `inode` and says how to answer it. With `pagesCached` (the kernel still holds the image's
    /// pages), an inode without open files stays with the page cache: its reads are served from there without a copy
    /// more, and a passthrough open would throw those pages away in the opener's time. `bypassWhileArriving`: the mount
    /// lets a large image still arriving and open nowhere else be read past the page cache.
    public func begin(
        _ inode: UInt64, file: ImageFilesystem.OpenFile, pagesCached: Bool = false, bypassWhileArriving: Bool = false
    ) -> Answer {
        if file.directIO { return .directIO }
        let answer = modes.withLock { modes -> Answer in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = .pageCache(opens: opens + 1)
                return .pageCache
            case .passthrough(let opens, let backingId, let registered)?:
                modes[inode] = .passthrough(opens: opens + 1, backingId: backingId, body: registered)
                let readsFromDaemon = file.kernelReadable?.identity != registered.identity
                return .passthrough(backingId: backingId, readsFromDaemon: readsFromDaemon)
            case nil:
                if let body = file.kernelReadable, !pagesCached, let backing, backing.isUsable,
                    let backingId = backing.register(body.descriptor)
                {
                    modes[inode] = .passthrough(opens: 1, backingId: backingId, body: body)
                    return .passthrough(backingId: backingId, readsFromDaemon: false)
                }
                modes[inode] = .pageCache(opens: 1)
                return .pageCache
            }
        }
        // Each byte goes once from imgfs into the reader's buffer (the kernel's read-ahead does not apply). Counted as
        // a page-cache open all the same: while it lives no open of the image asks for passthrough, which the kernel
        // refuses next to a shared mapping of it.
        if answer == .pageCache && file.arrivingAlone && bypassWhileArriving { return .directIO }
        return answer
    }

    /// An open of `inode` that ``begin(_:file:pagesCached:bypassWhileArriving:)`` counted ended: released by the
    /// kernel, or its answer never reached the kernel.
    public func end(_ inode: UInt64) {
        modes.withLock { modes in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = opens > 1 ? .pageCache(opens: opens - 1) : nil
            case .passthrough(let opens, let backingId, let registered)?:
                if opens > 1 {
                    modes[inode] = .passthrough(opens: opens - 1, backingId: backingId, body: registered)
                    return
                }
                modes[inode] = nil
                // Dropped under the lock: a later open of this inode registers anew only after this id is gone.
                backing?.unregister(backingId)
            case nil:
                break
            }
        }
    }
}
