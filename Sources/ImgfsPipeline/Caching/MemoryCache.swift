import ImgfsModel

/// Complete images in memory, least recently used first out, within a budget of bytes.
///
/// Guarantees: the bytes of the images it holds never exceed `budget` (an image larger than the budget is not kept);
/// dropping an entry (eviction, purge) never disturbs a reader that is using it: readers hold their own reference to
/// the bytes, which are freed when the last reader is done. Thread safe.
public final class MemoryCache: Sendable {
    /// Counters since the cache was made.
    public struct Counters: Codable, Equatable, Sendable {
        /// Look-ups that found an image.
        public var hits = 0
        /// Look-ups that found none.
        public var misses = 0
        /// Images dropped to stay within the budget.
        public var evictions = 0
        /// Purges (each empties the cache).
        public var purges = 0
    }

    private final class Node {
        let key: String
        var image: CachedImage
        var newer: Node?
        weak var older: Node?

        init(key: String, image: CachedImage) {
            self.key = key
            self.image = image
        }
    }

    private struct State {
        var nodes: [String: Node] = [:]
        var newest: Node?
        var oldest: Node?
        var bytes = 0
        var counters = Counters()
        var budget: Int
    }

    /// The most bytes held now: the configured budget, or less while a memory limit asks for less
    /// (``limit(to:)``).
    public var budget: Int { state.withLock { $0.budget } }
    /// The budget it was made with.
    public let configuredBudget: Int
    private let state: Locked<State>

    /// An empty cache that holds at most `budget` bytes (a negative budget counts as 0).
    public init(budget: Int) {
        configuredBudget = max(0, budget)
        state = Locked(State(budget: configuredBudget))
    }

    /// Holds at most `bytes` (never more than the configured budget; nil: the configured budget again), evicting
    /// the least recently used images at once to get there. Returns the budget now in force.
    @discardableResult
    public func limit(to bytes: Int?) -> Int {
        state.withLock { state in
            state.budget = min(configuredBudget, max(0, bytes ?? configuredBudget))
            Self.evict(&state, keeping: nil)
            return state.budget
        }
    }

    /// The image under `key`, now the most recently used; counted as a hit or a miss.
    public func image(forKey key: String) -> CachedImage? {
        state.withLock { state in
            guard let node = state.nodes[key] else {
                state.counters.misses += 1
                return nil
            }
            state.counters.hits += 1
            Self.unlink(node, &state)
            Self.pushNewest(node, &state)
            return node.image
        }
    }

    /// The image under `key` without counting or reordering.
    public func peek(_ key: String) -> CachedImage? {
        state.withLock { $0.nodes[key]?.image }
    }

    /// Keeps `image` under `key` (replacing what was there), evicting the least recently used images to stay within
    /// the budget. Returns false when the image alone is larger than the budget (it is then not kept).
    @discardableResult
    public func insert(_ image: CachedImage, forKey key: String) -> Bool {
        state.withLock { state in
            if let old = state.nodes.removeValue(forKey: key) {
                Self.unlink(old, &state)
                state.bytes -= old.image.cost
            }
            guard image.cost <= state.budget else { return false }
            let node = Node(key: key, image: image)
            state.nodes[key] = node
            Self.pushNewest(node, &state)
            state.bytes += image.cost
            Self.evict(&state, keeping: node)
            return true
        }
    }

    /// Drops the least recently used images (never `keeping`) until the bytes held fit the budget.
    private static func evict(_ state: inout State, keeping: Node?) {
        while state.bytes > state.budget, let victim = state.oldest, victim !== keeping {
            unlink(victim, &state)
            state.nodes[victim.key] = nil
            state.bytes -= victim.image.cost
            state.counters.evictions += 1
        }
    }

    /// Changes the image under `key` in place (e.g. a renewed expiry), if it is held.
    public func update(_ key: String, _ change: (inout CachedImage) -> Void) {
        state.withLock { state in
            guard let node = state.nodes[key] else { return }
            let before = node.image.cost
            change(&node.image)
            state.bytes += node.image.cost - before
        }
    }

    /// Drops the image under `key`.
    public func remove(_ key: String) {
        state.withLock { state in
            guard let node = state.nodes.removeValue(forKey: key) else { return }
            Self.unlink(node, &state)
            state.bytes -= node.image.cost
        }
    }

    /// Drops every image `shouldRemove` accepts (called with the lock held: it must not use the cache), in one pass.
    public func removeAll(where shouldRemove: (CachedImage) -> Bool) {
        state.withLock { state in
            for node in state.nodes.values.filter({ shouldRemove($0.image) }) {
                state.nodes[node.key] = nil
                Self.unlink(node, &state)
                state.bytes -= node.image.cost
            }
        }
    }

    /// Drops everything (a memory-pressure purge); returns the bytes freed from the cache.
    @discardableResult
    public func purge() -> Int {
        state.withLock { state in
            let freed = state.bytes
            state.nodes.removeAll()
            state.newest = nil
            state.oldest = nil
            state.bytes = 0
            state.counters.purges += 1
            return freed
        }
    }

    /// The keys held, in no particular order.
    public var keys: [String] { state.withLock { Array($0.nodes.keys) } }
    /// Bytes held.
    public var totalBytes: Int { state.withLock { $0.bytes } }
    /// Images held.
    public var count: Int { state.withLock { $0.nodes.count } }
    /// The counters so far.
    public var counters: Counters { state.withLock { $0.counters } }

    // MARK: - List (lock held)

    private static func unlink(_ node: Node, _ state: inout State) {
        let newer = node.newer, older = node.older
        newer?.older = older
        older?.newer = newer
        if state.newest === node { state.newest = older }
        if state.oldest === node { state.oldest = newer }
        node.newer = nil
        node.older = nil
    }

    private static func pushNewest(_ node: Node, _ state: inout State) {
        node.older = state.newest
        state.newest?.newer = node
        state.newest = node
        if state.oldest == nil { state.oldest = node }
    }
}
