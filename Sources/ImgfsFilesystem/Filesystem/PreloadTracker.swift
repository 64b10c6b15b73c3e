import ImgfsModel

/// Which image inodes the kernel was handed the bytes of with an open (``ImageFilesystem/OpenFile/preload``), and a
/// generation per inode that a change of content bumps.
///
/// Guarantees: each content of an inode is claimed for a preload at most once; a preload whose generation is no longer
/// current when it has been stored is reported as stale, so that the bytes it put into the kernel are dropped again (a
/// change of content that raced with the store).
final class PreloadTracker: Sendable {
    private struct State {
        var claimed: Set<UInt64> = []
        var generations: [UInt64: UInt64] = [:]
    }

    private let state = Locked(State())

    /// Claims the preload of `inode`'s current content: its generation, or nil when it was claimed already.
    func claim(_ inode: UInt64) -> UInt64? {
        state.withLock { state in
            guard state.claimed.insert(inode).inserted else { return nil }
            return state.generations[inode, default: 0]
        }
    }

    /// The content of `inode` changed: the next open hands its bytes over again.
    func contentChanged(_ inode: UInt64) {
        state.withLock { state in
            state.claimed.remove(inode)
            state.generations[inode, default: 0] &+= 1
        }
    }

    /// Whether `generation` is still the current content of `inode`.
    func isCurrent(_ inode: UInt64, generation: UInt64) -> Bool {
        state.withLock { $0.generations[inode, default: 0] == generation }
    }

    /// The kernel forgot `inode`.
    func forget(_ inode: UInt64) {
        state.withLock { state in
            state.claimed.remove(inode)
            state.generations[inode] = nil
        }
    }
}
