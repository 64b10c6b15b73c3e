import Glibc

/// Registers a PSI trigger: opens a pressure file and writes "some THRESHOLD_US WINDOW_US" to it.
enum PSITrigger {
    /// The trigger text for a stall of `threshold` within `window`.
    static func text(threshold: Duration, window: Duration) -> String {
        "some \(threshold.wholeMicroseconds) \(window.wholeMicroseconds)"
    }

    /// Opens `path` (O_RDWR|O_NONBLOCK|O_CLOEXEC) and writes `trigger` with its terminating NUL (the kernel
    /// overwrites the last byte written with one). Returns the descriptor to poll for POLLPRI. `invalidHint` is added
    /// to the reason when the kernel refuses the trigger with EINVAL.
    static func register(
        path: String, trigger: String, invalidHint: String? = nil
    ) throws(PSIRegistrationError) -> Int32 {
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw PSIRegistrationError(path: path, trigger: trigger, reason: SystemFile.describe(errno: errno))
        }
        var bytes = Array(trigger.utf8)
        bytes.append(0)
        var written: Int
        repeat {
            written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        } while written < 0 && errno == EINTR
        guard written == bytes.count else {
            let code = errno
            var reason = written < 0 ? SystemFile.describe(errno: code) : "short write"
            if written < 0, code == EINVAL, let invalidHint { reason += " (\(invalidHint))" }
            close(fd)
            throw PSIRegistrationError(path: path, trigger: trigger, reason: reason)
        }
        return fd
    }

    /// Why the kernel may refuse `window`: it takes 500 ms to 10 s, and under 2 s only with CAP_SYS_RESOURCE.
    static func windowHint(_ window: Duration) -> String? {
        if window < .milliseconds(500) || window > .seconds(10) { return "the window must be 500 ms to 10 s" }
        if window < .seconds(2) { return "a window under 2 s needs CAP_SYS_RESOURCE" }
        return nil
    }

    /// The "some …" line of a pressure file, for log lines and reasons.
    static func someLine(path: String) -> String? {
        SystemFile.contents(of: path, limit: 4096)?
            .split(separator: "\n")
            .first { $0.hasPrefix("some") }
            .map(String.init)
    }
}
