/// Runs submitted jobs off the caller's thread: what a ``WorkerPool`` does, as a protocol so that tests can pass a
/// fake that runs jobs inline or holds them.
///
/// Guarantees (of every conforming type): jobs start in the order they were submitted; ``drain()`` returns once every
/// job submitted before the call has run. Safe to call from any thread.
public protocol JobRunning: Sendable {
    /// Queues `job`; returns at once.
    func submit(_ job: @escaping @Sendable () -> Void)
    /// Returns once everything submitted before the call has run (or was dropped by a stop).
    func drain()
}
