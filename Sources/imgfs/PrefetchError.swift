import Glibc
import ImgfsModel

/// Why `imgfs prefetch` could not warm one URL: the errno of the read through the mount, or why the text is not a URL.
///
/// The errno is kept as a number and turned into text only when printed (on one thread, at the end).
enum PrefetchError: Error, Sendable, CustomStringConvertible {
    /// A system call on the mount failed with this errno (`ENOENT` for a 404, `EMEDIUMTYPE` for a body that is not
    /// an image, ...).
    case system(Int32)
    /// The same, with the reason the daemon gave (`HTTP 500 Internal Server Error`, from `imgfs why`'s source).
    case daemon(Int32, String)
    /// The line of the list is not a URL imgfs can name.
    case invalidURL(NameError)

    /// The daemon's reason and the errno's text ("No such file or directory", "Wrong medium type"), or why the URL
    /// is invalid.
    var description: String {
        switch self {
        case .system(let code): String(cString: strerror(code))
        case .daemon(let code, let reason): "\(reason) (\(String(cString: strerror(code))))"
        case .invalidURL(let reason): URLText.describe(reason)
        }
    }
}
