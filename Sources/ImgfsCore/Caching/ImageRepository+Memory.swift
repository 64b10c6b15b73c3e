import Foundation

// MARK: - Memory held outside the memory cache: queued disk writes, and transfers just called off

extension ImageRepository {
    /// The most bytes the queued disk writes hold: the memory cache's budget, or 64 MiB if that is more, unless a
    /// memory limit (a cgroup's) has lowered the budget, which then bounds the queue too.
    var writeQueueBound: Int {
        let budget = memory.budget
        return budget < memory.configuredBudget ? budget : max(budget, 64 << 20)
    }

    /// Whether queued disk writes must go now: they hold more than the memory cache's budget, or a purge asked.
    var mustHurryWrites: Bool {
        queuedWriteBytes.load(ordering: .relaxed) > memory.budget
            || DispatchTime.now().uptimeNanoseconds < hurryWritesUntil.load(ordering: .relaxed)
    }

    /// Remembers that `url`'s transfer is being called off (before it is, so no lookup can come in between).
    func markAbandoned(_ url: ImageURL) {
        let now = ContinuousClock.now
        abandoned.withLock { table in
            table = table.filter { now - $0.value < Self.abandonedGrace }
            table[url.cacheKey] = now
        }
    }

    /// Whether `key`'s transfer was called off less than ``abandonedGrace`` ago. Readers interrupted together make the
    /// kernel send more requests for the name as they die (processes that waited behind the lookup interrupted first
    /// try it again, and some get their request out before the signal stops them): a transfer such a request starts
    /// is held back briefly (``restartHold``), so the interrupt that follows calls it off unsent.
    func _abandonedRecently(_ key: String) -> Bool {
        guard let when = abandoned.withLock({ $0[key] }) else { return false }
        return ContinuousClock.now - when < Self.abandonedGrace
    }
}
