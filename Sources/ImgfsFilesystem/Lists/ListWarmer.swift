import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers
import Logging

/// Warms whole lists: once a list marked for warming (``ListWarmMark``, `imgfs list add --warm`) is looked up (when
/// `list add` stores it, and the first time its folder is opened after a mount), its entries are loaded in list order
/// at ``FetchPriority/background``, so a data loader that reads the list in any order finds its images cached or
/// already on their way.
///
/// Guarantees:
/// - Warming goes after everyone: its transfers are admitted after every waited and read-ahead transfer; a reader who
///   opens an entry still queued promotes it, and one under way is joined (never fetched twice).
/// - At most `window` entries of a list are loading at once, and entries are taken from the list one at a time: at
///   most `window` URLs are parsed and held per list, however long the list is.
/// - One warm per list at a time; a list gone through to its end is not warmed again until its file changes (it was
///   added again: then from its first entry) or the mount restarts.
/// - It stops (starts nothing more and calls off its transfers that nobody has open or waits for) when the list or
///   its mark is removed, noticed within ``checkInterval``, and at ``stop()`` (unmount). It takes no more entries once
///   those it went through add up to `budget` bytes: a share of the cache, since warming past the cache's size would
///   evict what it warmed.
/// - While a list warms, its read-ahead gives nothing up on a jump (``ListDirectories``): a shuffled reader's opens
///   are all jumps, and what read-ahead started the warm would only fetch again.
public final class ListWarmer: Sendable {
    /// What warming one list has done since it (last) started.
    public struct Counters: Sendable, Codable, Equatable {
        /// Entries gone through (each is one of cached, fetched, failed, or still loading).
        public var entries = 0
        /// Entries that were cached already.
        public var cached = 0
        /// Entries whose transfer completed.
        public var fetched = 0
        /// Entries that failed (or are not valid URLs).
        public var failed = 0
        /// The sizes of the cached and fetched entries.
        public var bytes = 0
        /// Whether it ended: the whole list gone through, the budget reached, or stopped.
        public var ended = false
    }

    private struct Run {
        var stamp: Date
        var next = 0
        /// The entries loading now, by cache key.
        var active: [String: ImageURL] = [:]
        var counters = Counters()
        var pumpQueued = false
    }

    private struct State {
        var runs: [String: Run] = [:]
        var stopped = false
        var ticking = false
    }

    /// How often a running warm looks whether its list and mark are still there.
    public static let checkInterval = 0.5
    /// Entries loading at once per list.
    public let window: Int
    /// Bytes a warm goes through at most.
    public let budget: Int
    private let store: ListStore
    private let repository: ImageRepository
    private let logger: Logger
    private let state = Locked(State())
    /// Where warms are decided and their entries started: off the FUSE threads, one step at a time.
    private let queue = WorkerPool(name: "imgfs-warm")

    /// Warms the marked lists of `store` through `repository`, `window` entries at a time (at least 1), each list up
    /// to `budget` bytes.
    public init(store: ListStore, repository: ImageRepository, window: Int, budget: Int, logger: Logger) {
        self.store = store
        self.repository = repository
        self.window = max(1, window)
        self.budget = max(0, budget)
        self.logger = logger
    }

    /// The list `name` was looked up: starts warming it when it is marked and not warmed (or warming) as it is now.
    /// Returns at once.
    public func listLookedUp(_ name: String) {
        guard !state.withLock({ $0.stopped }) else { return }
        queue.submit { [self] in consider(name) }
    }

    /// Stops every warm and calls off their transfers nobody has open (at unmount); later lookups start nothing.
    public func stop() {
        let active = state.withLock { state -> [ImageURL] in
            state.stopped = true
            defer {
                for name in state.runs.keys {
                    state.runs[name]?.active = [:]
                    state.runs[name]?.counters.ended = true
                }
            }
            return state.runs.values.flatMap { $0.active.values }
        }
        queue.stop()
        for url in active { repository.warmingCalledOff(url) }
    }

    /// Whether the list `name` is being warmed now.
    public func isWarming(_ name: String) -> Bool {
        state.withLock { $0.runs[name].map { !$0.counters.ended } ?? false }
    }

    /// One list's counters with its name (for JSON, where a name must not be taken for a key).
    public struct Named: Sendable, Codable, Equatable {
        /// The list's name.
        public let name: String
        /// What its warm has done.
        public let counters: Counters
    }

    /// The counters of every list warmed since the mount, by name.
    public func counters() -> [Named] {
        state.withLock { $0.runs.map { Named(name: $0.key, counters: $0.value.counters) } }.sorted { $0.name < $1.name }
    }

    // MARK: - On the warm queue

    /// The list's file's time when the list is there and marked, else nil.
    private func wanted(_ name: String) -> Date? {
        guard ListWarmMark.isSet(list: name, in: store) else { return nil }
        return ListWarmMark.listStamp(name, in: store)
    }

    private func consider(_ name: String) {
        guard let stamp = wanted(name) else {
            end(name, because: "its list or mark was removed")
            return
        }
        let start = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if let run = state.runs[name], run.stamp == stamp { return false }
            // A replaced list starts over; what its last warm still loads counts against the window.
            var run = Run(stamp: stamp)
            run.active = state.runs[name]?.active ?? [:]
            run.pumpQueued = true
            state.runs[name] = run
            return true
        }
        guard start else { return }
        logger.info("warming list \(name) in the background", metadata: ["window": "\(window)"])
        pump(name)
        scheduleTick()
    }

    private enum Step {
        case take(Int)
        case wait
        case ended(Counters)
    }

    /// Starts entries of `name` until the window is full, the list is gone through, or the budget is reached.
    private func pump(_ name: String) {
        guard var list = store.list(name) else {
            end(name, because: "its list was removed")
            return
        }
        state.withLock { $0.runs[name]?.pumpQueued = false }
        let rules = repository.rules.current
        var checked = ContinuousClock.now
        while true {
            if ContinuousClock.now - checked > .seconds(Self.checkInterval) {
                checked = .now
                guard let stamp = wanted(name), let current = store.list(name) else {
                    end(name, because: "its list or mark was removed")
                    return
                }
                if stamp != state.withLock({ $0.runs[name]?.stamp }) { return consider(name) }
                list = current
            }
            let step = nextStep(name, count: list.entries.count)
            guard case .take(let next) = step else {
                if case .ended(let counters) = step { logEnd(name, counters) }
                return
            }
            guard let url = list.entries[next].url(keying: rules) else {
                state.withLock { $0.runs[name]?.counters.failed += 1 }
                continue
            }
            let fresh = state.withLock { state -> Bool in
                guard state.runs[name]?.active[url.cacheKey] == nil else { return false }
                state.runs[name]?.active[url.cacheKey] = url
                return true
            }
            // The same URL twice in a list: it is loading already.
            guard fresh else { continue }
            repository.warm(url) { [self] result in finished(name, key: url.cacheKey, result) }
        }
    }

    /// The next entry to start, or why none starts now.
    private func nextStep(_ name: String, count: Int) -> Step {
        state.withLock { state -> Step in
            guard !state.stopped, var run = state.runs[name], !run.counters.ended, run.active.count < window else {
                return .wait
            }
            guard run.next < count, run.counters.bytes < budget else {
                guard run.active.isEmpty else { return .wait }
                run.counters.ended = true
                state.runs[name] = run
                return .ended(run.counters)
            }
            run.next += 1
            run.counters.entries += 1
            state.runs[name] = run
            return .take(run.next - 1)
        }
    }

    private func finished(_ name: String, key: String, _ result: ImageRepository.WarmResult) {
        let schedule = state.withLock { state -> Bool in
            guard var run = state.runs[name], run.active.removeValue(forKey: key) != nil else { return false }
            switch result {
            case .cached(let size):
                run.counters.cached += 1
                run.counters.bytes += size
            case .fetched(let size):
                run.counters.fetched += 1
                run.counters.bytes += size
            case .failed:
                run.counters.failed += 1
            }
            let pump = !run.pumpQueued && !run.counters.ended && !state.stopped
            run.pumpQueued = run.pumpQueued || pump
            state.runs[name] = run
            return pump
        }
        if schedule { queue.submit { [self] in pump(name) } }
    }

    /// Ends the warm of `name` (if one runs), calling off what it still loads.
    private func end(_ name: String, because reason: String) {
        let ended = state.withLock { state -> (Counters, [ImageURL])? in
            guard var run = state.runs[name], !run.counters.ended else { return nil }
            let active = Array(run.active.values)
            run.active = [:]
            run.counters.ended = true
            state.runs[name] = run
            return (run.counters, active)
        }
        guard let (counters, active) = ended else { return }
        for url in active { repository.warmingCalledOff(url) }
        logger.info(
            "warming of list \(name) stopped: \(reason)",
            metadata: ["entries": "\(counters.entries)", "fetched": "\(counters.fetched)"])
    }

    private func logEnd(_ name: String, _ counters: Counters) {
        let budget = counters.bytes >= self.budget ? " (the warming budget of the cache is reached)" : ""
        logger.info(
            "warmed list \(name)\(budget)",
            metadata: [
                "entries": "\(counters.entries)", "cached": "\(counters.cached)", "fetched": "\(counters.fetched)",
                "failed": "\(counters.failed)", "bytes": "\(counters.bytes)"
            ])
    }

    /// Looks, every ``checkInterval`` while any warm runs, whether each running warm's list and mark are still there.
    private func scheduleTick() {
        let start = state.withLock { state -> Bool in
            guard !state.ticking, !state.stopped else { return false }
            state.ticking = true
            return true
        }
        guard start else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.checkInterval) { [weak self] in
            self?.queue.submit { [weak self] in self?.tick() }
        }
    }

    private func tick() {
        let running = state.withLock { state -> [(String, Date)] in
            state.ticking = false
            return state.runs.filter { !$0.value.counters.ended }.map { ($0.key, $0.value.stamp) }
        }
        for (name, stamp) in running {
            guard let now = wanted(name) else {
                end(name, because: "its list or mark was removed")
                continue
            }
            if now != stamp { consider(name) }
        }
        if state.withLock({ $0.runs.values.contains { !$0.counters.ended } }) { scheduleTick() }
    }
}
