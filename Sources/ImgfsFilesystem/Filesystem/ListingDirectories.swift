import ImgfsModel

/// Which directories are being listed now: a directory with an open listing (OPENDIR not yet released). Programs that
/// stat every entry of a folder (`ls -l`, `gio list`, file managers, `os.scandir` + `stat`) look the entries up while
/// their listing is open; a program that reads a file by name (`cat`, a viewer given a path) has no listing open. The
/// lookup of an image in a listed folder under `lists/` or `hosts/` is therefore a probe, elsewhere a whole GET that
/// stops after the probe's bytes unless an open joins it in time.
///
/// Guarantees: thread safe; a directory counts as listed from ``opened(_:handle:)`` until every handle opened on it
/// was ``closed(_:)``; a handle closed twice, or never opened, changes nothing.
final class ListingDirectories: Sendable {
    private struct State {
        var directories: [UInt64: UInt64] = [:]  // handle → directory inode
        var open: [UInt64: Int] = [:]  // directory inode → open handles
    }

    private let state = Locked(State())

    /// A listing of `directory` was opened with `handle`.
    func opened(_ directory: UInt64, handle: UInt64) {
        state.withLock { state in
            state.directories[handle] = directory
            state.open[directory, default: 0] += 1
        }
    }

    /// The listing `handle` was closed.
    func closed(_ handle: UInt64) {
        state.withLock { state in
            guard let directory = state.directories.removeValue(forKey: handle) else { return }
            let left = (state.open[directory] ?? 1) - 1
            state.open[directory] = left > 0 ? left : nil
        }
    }

    /// The directory the listing `handle` is of, while it is open.
    func directory(of handle: UInt64) -> UInt64? {
        state.withLock { $0.directories[handle] }
    }

    /// Whether some listing of `directory` is open now.
    func isListed(_ directory: UInt64) -> Bool {
        state.withLock { $0.open[directory] != nil }
    }
}
