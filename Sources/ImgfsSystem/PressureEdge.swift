/// Turns a stream of "under pressure or not" readings into edge-triggered, rate-limited notifications.
///
/// A reading that enters pressure arms a notification; it is sent as soon as the rate limit allows while the pressure
/// lasts, and dropped if the pressure ends first. Staying under pressure sends nothing more.
struct PressureEdge {
    private var wasUnderPressure = false
    private var pending = false
    private var limiter: RateLimiter

    init(minimumInterval: Duration) {
        limiter = RateLimiter(minimumInterval: minimumInterval)
    }

    /// Records one reading (`reason` nil when memory is plentiful); returns the reason to send now, if any.
    mutating func record(_ reason: String?, now: ContinuousClock.Instant = .now) -> String? {
        let underPressure = reason != nil
        if underPressure && !wasUnderPressure { pending = true }
        if !underPressure { pending = false }
        wasUnderPressure = underPressure
        guard pending, let reason, limiter.allow(now: now) else { return nil }
        pending = false
        return reason
    }
}
