import ImgfsModel

/// Which callers are expected to open what they look up: a caller (the kernel's thread id of the request) not seen
/// yet, or one whose last image lookup was followed by its open of that image (`cp`, a data loader's `open`, a viewer
/// stepping through a folder); not one that looked up without opening (`ls -l`, a file manager's stats) until it
/// opens what it looked up again.
///
/// Guarantees: thread safe; at most ``limit`` callers are remembered (all are forgotten when more come); caller 0 (a
/// request the kernel makes for itself) is never expected to open.
final class ReadingCallers: Sendable {
    /// How many callers are remembered.
    static let limit = 4096

    private struct Habit {
        var lastLookedUp: String
        var opened = false
    }

    private let habits = Locked<[Int32: Habit]>([:])

    /// `caller` looks up the image with cache key `key`; returns whether it is expected to open it: it is new, or it
    /// opened the image of its previous lookup.
    func lookedUp(_ key: String, by caller: Int32) -> Bool {
        guard caller != 0 else { return false }
        return habits.withLock { habits in
            let expected = habits[caller]?.opened ?? true
            if habits[caller] == nil && habits.count >= Self.limit { habits.removeAll(keepingCapacity: true) }
            habits[caller] = Habit(lastLookedUp: key)
            return expected
        }
    }

    /// `caller` opens the image with cache key `key`.
    func opened(_ key: String, by caller: Int32) {
        guard caller != 0 else { return }
        habits.withLock { habits in
            if habits[caller]?.lastLookedUp == key { habits[caller]?.opened = true }
        }
    }
}
