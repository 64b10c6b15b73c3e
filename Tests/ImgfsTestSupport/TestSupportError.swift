#if canImport(Glibc)
    import Glibc
#endif

/// Errors thrown by the test-support helpers (`TestOrigin`, `ChildProcess`).
///
/// Every case carries enough context to explain a failing test on its own.
public enum TestSupportError: Error, CustomStringConvertible, Sendable {
    /// A system call failed; `errno` is the value it left behind.
    case systemCall(String, errno: Int32)
    /// An argument could not be used (for example a host that is not an IPv4 address).
    case invalidArgument(String)
    /// A command run by `ChildProcess.run` did not finish in time; it was killed.
    case timedOut(command: String, seconds: Double, output: String)

    /// A one-line human-readable explanation.
    public var description: String {
        switch self {
        case .systemCall(let name, let errno):
            return "\(name) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .invalidArgument(let message):
            return "invalid argument: \(message)"
        case .timedOut(let command, let seconds, let output):
            return "\(command) did not finish within \(seconds) s; output so far:\n\(output)"
        }
    }

    /// Builds a `.systemCall` error from the current thread's `errno`.
    static func fromErrno(_ name: String) -> TestSupportError {
        .systemCall(name, errno: errno)
    }
}
