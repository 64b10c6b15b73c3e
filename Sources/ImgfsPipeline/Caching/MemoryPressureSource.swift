import ImgfsModel

/// Tells when the machine is short of memory, like a memory warning on iOS.
///
/// Implementations must be thread safe; `start` returns at once and calls `onPressure` (on any thread, never twice at
/// once) each time pressure is detected, with a short description of what was seen; after `stop` returns, no more
/// calls are made.
public protocol MemoryPressureSource: Sendable {
    func start(_ onPressure: @escaping @Sendable (_ reason: String) -> Void)
    func stop()
}
