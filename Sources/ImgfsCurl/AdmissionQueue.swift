import ImgfsModel

/// Waiting transfers, admitted by priority class and first-come first-served within a class, within a limit of
/// simultaneous transfers in total and per host.
///
/// Guarantees: an item is admitted only while fewer than `maxActive` are active and fewer than its host's limit
/// (`maxPerHost`, or the host's own from `hostLimit`, asked of each item of the host as it is queued) of its host
/// are; among the items that may start, one of the most urgent class starts first, and within a class the oldest;
/// a host at its limit never holds back items of other hosts (no head-of-line blocking across hosts); a promoted item
/// keeps its age in its new class. A host known to multiplex (HTTP/2) is admitted its limit times its streams per
/// connection. Fair across hosts: an item someone waits for (``FetchPriority/waited``) whose host has nothing active
/// and that has waited `starvation` or longer starts even when `maxActive` are active, up to `reserve` such items
/// beyond it, so hosts that hold every place (slow ones) keep another host's reader out for seconds at most. Not
/// thread safe: one owner drives it.
public struct AdmissionQueue<Item> {
    private struct Key: Hashable {
        let host: String
        let priority: FetchPriority
    }

    private struct Waiting {
        let sequence: Int
        let item: Item
        let since: ContinuousClock.Instant
    }

    /// One host's waiting items; `head` indexes the oldest, so taking it costs no copy.
    private struct HostQueue {
        var items: [Waiting] = []
        var head = 0
        var oldest: Waiting? { head < items.count ? items[head] : nil }

        mutating func takeOldest() -> Waiting {
            defer {
                head += 1
                if head > 64 && head * 2 > items.count {
                    items.removeFirst(head)
                    head = 0
                }
            }
            return items[head]
        }
    }

    /// How many items may run at once.
    public let maxActive: Int
    /// How many items for one host may run at once.
    public let maxPerHost: Int
    /// How many starved items may run beyond `maxActive`.
    public let reserve: Int
    /// How long a waited item of an idle host waits before it may use the reserve.
    public let starvation: Duration
    private var waitingByHost: [Key: HostQueue] = [:]
    private var activeByHost: [String: Int] = [:]
    /// Each host's limit, as `hostLimit` said of its last item queued.
    private var limitByHost: [String: Int] = [:]
    /// Transfers each connection of a host carries at once, for hosts known to multiplex (absent: 1).
    private var streamsByHost: [String: Int] = [:]
    /// A limit of an item's host's own (a policy rule's, in the rules the item was made under), or nil for
    /// `maxPerHost`.
    private let hostLimit: (Item) -> Int?
    private var nextSequence = 0
    /// How many admitted items have not finished.
    public private(set) var activeCount = 0
    /// How many items wait.
    public private(set) var waitingCount = 0

    /// An empty queue (limits below 1 count as 1): an item that has waited longer than `starvation` is starved, and
    /// `hostLimit` gives an item's own limit for its host when its rules set one.
    public init(
        maxActive: Int, maxPerHost: Int, starvation: Duration = .seconds(2),
        hostLimit: @escaping (Item) -> Int? = { _ in nil }
    ) {
        self.maxActive = max(1, maxActive)
        self.maxPerHost = max(1, maxPerHost)
        self.reserve = max(1, self.maxActive / 4)
        self.starvation = starvation
        self.hostLimit = hostLimit
    }

    /// Adds `item`, for `host`, to the end of its class.
    public mutating func enqueue(
        _ item: Item, host: String, priority: FetchPriority = .waited, now: ContinuousClock.Instant = .now
    ) {
        limitByHost[host] = max(1, hostLimit(item) ?? maxPerHost)
        waitingByHost[Key(host: host, priority: priority), default: HostQueue()].items
            .append(Waiting(sequence: nextSequence, item: item, since: now))
        nextSequence += 1
        waitingCount += 1
    }

    /// Takes the items that may start now, oldest first, and counts them as active (see the type's guarantees for
    /// the starved items that may start beyond `maxActive`).
    public mutating func admit(now: ContinuousClock.Instant = .now) -> [(item: Item, host: String)] {
        var admitted: [(item: Item, host: String)] = []
        while activeCount < maxActive, let key = next(where: { _, _ in true }) {
            admitted.append(take(key))
        }
        let starvedSince = now - starvation
        while activeCount >= maxActive, activeCount < maxActive + reserve,
            let key = next(where: { key, oldest in
                key.priority == .waited && activeByHost[key.host] == nil && oldest.since <= starvedSince
            })
        {
            admitted.append(take(key))
        }
        return admitted
    }

    /// The queue whose oldest item starts next among those `eligible` (and under their host's limit).
    private func next(where eligible: (Key, Waiting) -> Bool) -> Key? {
        var best: (key: Key, rank: (Int, Int))?
        for (key, queue) in waitingByHost where activeByHost[key.host, default: 0] < limit(of: key.host) {
            guard let oldest = queue.oldest, eligible(key, oldest) else { continue }
            let rank = (key.priority.rawValue, oldest.sequence)
            if best.map({ rank < $0.rank }) ?? true { best = (key, rank) }
        }
        return best?.key
    }

    private mutating func take(_ key: Key) -> (item: Item, host: String) {
        let item = waitingByHost[key]!.takeOldest().item
        if waitingByHost[key]?.oldest == nil { waitingByHost[key] = nil }
        activeByHost[key.host, default: 0] += 1
        activeCount += 1
        waitingCount -= 1
        return (item, key.host)
    }

    /// Whether an item someone waits for (``FetchPriority/waited``) is waiting for a place.
    public var hasWaitedItems: Bool {
        waitingByHost.keys.contains { $0.priority == .waited }
    }

    /// How many items of `host` may be active at once: its limit, times its streams per connection when it multiplexes.
    public func limit(of host: String) -> Int {
        limitByHost[host, default: maxPerHost] * streamsByHost[host, default: 1]
    }

    /// Records that each connection to `host` carries `streams` transfers at once (HTTP/2), or 1 (HTTP/1.1); the
    /// host's limit then bounds its connections. Returns whether that changed.
    @discardableResult
    public mutating func setStreamsPerConnection(_ streams: Int, host: String) -> Bool {
        let streams = max(1, streams)
        guard streamsByHost[host, default: 1] != streams else { return false }
        streamsByHost[host] = streams == 1 ? nil : streams
        return true
    }

    /// An admitted item of `host` has finished.
    public mutating func finished(host: String) {
        guard let count = activeByHost[host], count > 0 else { return }
        activeByHost[host] = count == 1 ? nil : count - 1
        activeCount -= 1
    }

    /// Removes the first waiting item that `matches`, if any.
    public mutating func removeWaiting(where matches: (Item) -> Bool) -> Item? {
        take(where: matches)?.waiting.item
    }

    /// Moves the waiting item that `matches` up to `priority` when it waits in a less urgent class, keeping its age;
    /// returns whether it moved.
    @discardableResult
    public mutating func promote(where matches: (Item) -> Bool, to priority: FetchPriority) -> Bool {
        guard let (key, waiting) = take(where: matches) else { return false }
        let target = Key(host: key.host, priority: min(priority, key.priority))
        var queue = waitingByHost[target] ?? HostQueue()
        let index = queue.items[queue.head...].firstIndex { $0.sequence > waiting.sequence } ?? queue.items.endIndex
        queue.items.insert(waiting, at: index)
        waitingByHost[target] = queue
        waitingCount += 1
        return target != key
    }

    private mutating func take(where matches: (Item) -> Bool) -> (key: Key, waiting: Waiting)? {
        for (key, queue) in waitingByHost {
            guard let index = queue.items[queue.head...].firstIndex(where: { matches($0.item) }) else { continue }
            var rest = queue
            let removed = rest.items.remove(at: index)
            waitingByHost[key] = rest.oldest == nil ? nil : rest
            waitingCount -= 1
            return (key, removed)
        }
        return nil
    }

    /// Removes and returns every waiting item.
    public mutating func removeAllWaiting() -> [Item] {
        let all = waitingByHost.values.flatMap { $0.items[$0.head...] }.sorted { $0.sequence < $1.sequence }.map(\.item)
        waitingByHost = [:]
        waitingCount = 0
        return all
    }
}
