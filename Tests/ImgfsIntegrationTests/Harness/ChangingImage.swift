import ImgfsTestSupport
import Synchronization

/// An image the test origin serves at one path in two versions of the same size and signature (one byte in the
/// middle differs), each with its own ETag (`"v1"`, `"v2"`): the first until ``change()``, the second after.
final class ChangingImage: Sendable {
    let first: [UInt8]
    let second: [UInt8]
    private let version = Mutex(1)

    init(_ image: [UInt8]) {
        first = image
        var changed = image
        changed[changed.count / 2] ^= 0x55
        second = changed
    }

    /// Serves the current version at `path` on `origin`.
    func route(on origin: TestOrigin, at path: String) {
        origin.route(prefix: path) { [self] _ in
            let current = version.withLock { $0 }
            var response = OriginResponse.ok(current == 1 ? first : second, contentType: "image/jpeg")
            response.headers.append(("ETag", "\"v\(current)\""))
            return response
        }
    }

    /// From now on the origin serves the second version.
    func change() {
        version.withLock { $0 = 2 }
    }
}
