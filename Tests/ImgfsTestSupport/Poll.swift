import Foundation

/// Waiting in tests, in three named forms so that a reader sees which waits are for a condition and which are about
/// time itself. Every wait of the test support goes through here (one sleep, in ``pause(_:)``).
///
/// Guarantees: ``until(timeout:interval:_:)`` returns as soon as the condition holds (true) or when the timeout has
/// passed (false), and never sleeps past its deadline; ``repeatedly(for:every:_:)`` runs its work at least once;
/// ``elapse(_:)`` lets that much time pass. Deadlines are on the monotonic clock.
public enum Poll {
    /// Polls `condition` every `interval` seconds until it holds or `timeout` seconds have passed.
    @discardableResult
    public static func until(timeout: Double = 10, interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.now() + timeout
        while !condition() {
            let remaining = deadline - MonotonicClock.now()
            guard remaining > 0 else { return false }
            pause(min(interval, remaining))
        }
        return true
    }

    /// Runs `work` every `interval` seconds for `seconds`: a load that lasts a while (what such a test is about).
    public static func repeatedly(for seconds: Double, every interval: Double = 0.01, _ work: () -> Void) {
        let end = MonotonicClock.now() + seconds
        repeat {
            work()
            pause(interval)
        } while MonotonicClock.now() < end
    }

    /// Lets `seconds` pass. Only where time is the point: an expiry that must be reached, a delay that must not have
    /// elapsed yet (nothing may have happened by then), a slow origin or a user who takes their time; never to wait
    /// for something that can be polled.
    public static func elapse(_ seconds: Double) {
        pause(seconds)
    }

    private static func pause(_ seconds: Double) {
        Thread.sleep(forTimeInterval: seconds)
    }
}
