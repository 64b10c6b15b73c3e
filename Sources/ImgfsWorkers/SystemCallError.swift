import Glibc

/// A failed system call, with the errno text.
///
/// Guarantees: ``description`` names the call and the error, such as "pthread_create: Resource temporarily
/// unavailable".
public struct SystemCallError: Error, CustomStringConvertible {
    /// The call that failed, such as "pipe".
    package let call: String
    /// The errno value it reported.
    package let code: Int32

    package init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    /// The call and the system's text for its error.
    public var description: String {
        guard let text = strerror(code) else { return "\(call): error \(code)" }
        return "\(call): \(String(cString: text))"
    }
}
