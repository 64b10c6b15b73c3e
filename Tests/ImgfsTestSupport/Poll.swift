import Foundation

/// Waiting in tests, in three named forms so that a reader sees which waits are for a condition and which are about
/// time itself.
///
/// Guarantees: ``until(timeout:interval:_:)`` returns as soon as the condition holds (true) or when the timeout has
/// passed (false); ``repeatedly(for:every:_:)`` runs its work at least once; ``elapse(_:)`` lets that much time pass.
public enum Poll {
    /// Polls `condition` every `interval` seconds until it holds or `timeout` seconds have passed.
    @discardableResult
    public static func until(timeout: Double = 10, interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: interval)
        }
        return true
    }

    /// Runs `work` every `interval` seconds for `seconds`: a load that lasts a while (what such a test is about).
    public static func repeatedly(for seconds: Double, every interval: Double = 0.01, _ work: () -> Void) {
        let end = Date().addingTimeInterval(seconds)
        repeat {
            work()
            Thread.sleep(forTimeInterval: interval)
        } while Date() < end
    }

    /// Lets `seconds` pass. Only for tests about time: an expiry that must be reached, or a delay that must not have
    /// elapsed yet (nothing may have happened by then); never to wait for something that can be polled.
    public static func elapse(_ seconds: Double) {
        Thread.sleep(forTimeInterval: seconds)
    }
}
