/// Waiting transfers, admitted first-come first-served within a limit of simultaneous transfers in total and per
/// host.
///
/// Guarantees: an item is admitted only while fewer than `maxActive` are active and fewer than its host's limit
/// (`maxPerHost`, or the host's own from `hostLimit`) of its host are; among the items that may start, the oldest
/// starts first; a host at its limit never holds back items of
/// other hosts (no head-of-line blocking across hosts). Not thread safe: one owner drives it.
public struct AdmissionQueue<Item> {
    private struct Waiting {
        let sequence: Int
        let item: Item
    }

    /// One host's waiting items; `head` indexes the oldest, so taking it costs no copy.
    private struct HostQueue {
        /// Transfers of this host at once (`maxPerHost`, or what `hostLimit` said when the queue was made).
        let limit: Int
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

    public let maxActive: Int
    public let maxPerHost: Int
    private var waitingByHost: [String: HostQueue] = [:]
    private var activeByHost: [String: Int] = [:]
    private var nextSequence = 0
    /// How many admitted items have not finished.
    public private(set) var activeCount = 0
    /// How many items wait.
    public private(set) var waitingCount = 0

    /// Asked once per host when it gets a queue: a limit of its own (a policy rule's), or nil for `maxPerHost`.
    private let hostLimit: (String) -> Int?

    public init(maxActive: Int, maxPerHost: Int, hostLimit: @escaping (String) -> Int? = { _ in nil }) {
        self.maxActive = max(1, maxActive)
        self.maxPerHost = max(1, maxPerHost)
        self.hostLimit = hostLimit
    }

    /// Adds `item`, for `host`, to the end of the queue.
    public mutating func enqueue(_ item: Item, host: String) {
        let waiting = Waiting(sequence: nextSequence, item: item)
        waitingByHost[host, default: HostQueue(limit: max(1, hostLimit(host) ?? maxPerHost))].items.append(waiting)
        nextSequence += 1
        waitingCount += 1
    }

    /// Takes the items that may start now, oldest first, and counts them as active.
    public mutating func admit() -> [(item: Item, host: String)] {
        var admitted: [(item: Item, host: String)] = []
        while activeCount < maxActive {
            var best: (host: String, sequence: Int)?
            for (host, queue) in waitingByHost where activeByHost[host, default: 0] < queue.limit {
                if let oldest = queue.oldest, oldest.sequence < best?.sequence ?? .max { best = (host, oldest.sequence) }
            }
            guard let host = best?.host else { break }
            admitted.append((waitingByHost[host]!.takeOldest().item, host))
            if waitingByHost[host]?.oldest == nil { waitingByHost[host] = nil }
            activeByHost[host, default: 0] += 1
            activeCount += 1
            waitingCount -= 1
        }
        return admitted
    }

    /// An admitted item of `host` has finished.
    public mutating func finished(host: String) {
        guard let count = activeByHost[host], count > 0 else { return }
        activeByHost[host] = count == 1 ? nil : count - 1
        activeCount -= 1
    }

    /// Removes the first waiting item that `matches`, if any.
    public mutating func removeWaiting(where matches: (Item) -> Bool) -> Item? {
        for (host, queue) in waitingByHost {
            guard let index = queue.items[queue.head...].firstIndex(where: { matches($0.item) }) else { continue }
            var rest = queue
            let removed = rest.items.remove(at: index)
            waitingByHost[host] = rest.oldest == nil ? nil : rest
            waitingCount -= 1
            return removed.item
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
