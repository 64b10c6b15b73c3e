import Foundation
import ImgfsModel
import ImgfsPipeline

/// Loads the next entries of a list in the background when one is opened, at ``FetchPriority/readAhead``, and calls
/// off what nobody asked for when the viewer jumps away.
///
/// Guarantees: opening entry i starts (at most once each) the transfers of entries i+1 ... i+depth not cached yet;
/// opening an entry more than `2 × depth` away from the last opened one of the same list cancels the read-ahead
/// transfers of that list nobody has opened yet (``Download/cancelIfAbandoned(openHandles:)``: never one someone
/// waits for); depth 0 does nothing. The read-ahead counters add up: every transfer read-ahead started is, at any
/// time, exactly one of used (its entry was opened later), wasted (given up by a jump before anyone opened it, whether
/// or not its transfer had finished) or pending (neither yet), so `started == used + wasted + pending`. An entry that
/// was cached, or already loading, when its turn came is not started and counts in none of them.
public final class ReadAhead: Sendable {
    /// Per-list counters.
    public struct Counters: OpenCounting, Sendable, Codable, Equatable {
        /// Opens of the list's entries.
        public var opens = 0
        /// Opens that found the image cached (memory or disk), and those that did not.
        public var hits = 0
        /// Opens that did not find the image cached.
        public var misses = 0
        /// The sizes of the opened images, where known at the open.
        public var bytes = 0
        /// Read-ahead transfers started.
        public var started = 0
        /// Of those, the ones whose entry was opened afterwards.
        public var used = 0
        /// Of those, the ones a jump gave up before their entry was opened.
        public var wasted = 0
        /// Of those, the ones neither opened nor given up yet.
        public var pending = 0
    }

    private struct ListState {
        var last: Int?
        /// URLs loaded ahead and not opened yet.
        var pending: Set<ImageURL> = []
        var counters = Counters()
    }

    /// How many entries after an opened one are loaded (`--tune read-ahead`); 0: none.
    public let depth: Int
    private let repository: ImageRepository
    private let state = Locked<[String: ListState]>([:])

    /// Read-ahead of `depth` entries (negative counts as 0) through `repository`.
    public init(depth: Int, repository: ImageRepository) {
        self.depth = max(0, depth)
        self.repository = repository
    }

    /// Entry `index` of `list` is being opened; `hit` says whether it was cached, `bytes` its size when known.
    /// `openHandles` tells how many file handles are open on an image (its transfer is then never called off).
    public func opened(
        _ list: ImageList, index: Int, hit: Bool = false, bytes: Int = 0,
        openHandles: (ImageURL) -> Int = { _ in 0 }
    ) {
        guard list.entries.indices.contains(index) else { return }
        let rules = repository.rules.current
        guard let opened = list.entries[index].url(keying: rules) else { return }
        let end = min(list.entries.count, index + 1 + depth)
        let ahead = depth == 0 ? [] : list.entries[(index + 1)..<end].compactMap { $0.url(keying: rules) }
        let (abandoned, toStart) = state.withLock { lists -> ([ImageURL], [ImageURL]) in
            var entry = lists[list.name] ?? ListState()
            entry.counters.countOpen(hit: hit, bytes: bytes)
            if entry.pending.remove(opened) != nil { entry.counters.used += 1 }
            var abandoned: [ImageURL] = []
            if let last = entry.last, abs(index - last) > 2 * max(depth, 1) {
                abandoned = Array(entry.pending.subtracting(ahead))
                entry.pending.subtract(abandoned)
                entry.counters.wasted += abandoned.count
            }
            entry.last = index
            let toStart = ahead.filter { $0 != opened && !entry.pending.contains($0) }
            entry.counters.pending = entry.pending.count
            lists[list.name] = entry
            return (abandoned, toStart)
        }
        for url in abandoned { repository.readerGaveUp(url, openHandles: openHandles(url)) }
        // Only a transfer started (or joined) now is read-ahead's: a cached entry is nobody's to use or waste.
        let started = toStart.filter { url in
            if case .success(nil) = repository.prepare(url, priority: .readAhead) { return true }
            return false
        }
        state.withLock { lists in
            guard var entry = lists[list.name] else { return }
            let new = started.filter { !entry.pending.contains($0) }
            entry.pending.formUnion(new)
            entry.counters.started += new.count
            entry.counters.pending = entry.pending.count
            lists[list.name] = entry
        }
    }

    /// One list's counters with its name (for JSON, where a name must not be taken for a key).
    public struct Named: Sendable, Codable, Equatable {
        /// The list's name.
        public let name: String
        /// The list's counters.
        public let counters: Counters
    }

    /// The counters of every list that was opened, by name.
    public func counters() -> [Named] {
        state.withLock { $0.map { Named(name: $0.key, counters: $0.value.counters) } }.sorted { $0.name < $1.name }
    }
}
