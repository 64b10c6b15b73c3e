/// Why a PSI trigger could not be registered: the file is missing (kernel without PSI), not writable, or the kernel
/// refused the trigger (for example a window under 2 s without CAP_SYS_RESOURCE).
public struct PSIRegistrationError: Error, CustomStringConvertible, Sendable {
    /// The pressure file that was tried last.
    public let path: String
    /// The trigger text that was written, such as "some 150000 2000000".
    public let trigger: String
    /// What went wrong, in words (the system's error text).
    public let reason: String

    /// Creates an error for `trigger` on `path`.
    public init(path: String, trigger: String, reason: String) {
        self.path = path
        self.trigger = trigger
        self.reason = reason
    }

    /// One line naming the file, the trigger and the reason.
    public var description: String {
        "cannot register PSI trigger \"\(trigger)\" on \(path): \(reason)"
    }
}
