/// Lets an event through at most once per `minimumInterval` (monotonic clock).
struct RateLimiter {
    let minimumInterval: Duration
    private var last: ContinuousClock.Instant?

    init(minimumInterval: Duration) {
        self.minimumInterval = minimumInterval
    }

    /// True, and remembers the time, when the previous allowed event is at least `minimumInterval` ago.
    mutating func allow(now: ContinuousClock.Instant = .now) -> Bool {
        if let last, now - last < minimumInterval { return false }
        last = now
        return true
    }
}
