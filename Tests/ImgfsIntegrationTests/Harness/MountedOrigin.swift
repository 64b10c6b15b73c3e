import Foundation
import ImgfsTestSupport

/// The setup most integration tests share: the test origin on 127.0.0.1 and the real imgfs binary mounted on a fresh
/// temporary directory, with the routes a test registers.
///
/// Guarantees: when `body` runs, the origin listens and the mount is up; however `body` ends (returns, throws, or a
/// `#require` fails), the mount is unmounted (`MountedImgfs.stop()`: fusermount3 -u, the daemon waited for or killed
/// by PID) and then the origin stopped. A mount that fails to start stops the origin too.
///
/// Routes are registered at the top of `body`: imgfs asks the origin nothing before a file is read.
func withMountedOrigin(
    _ arguments: [String] = [], cacheDirectory: String? = nil, environment: [String: String]? = nil,
    _ body: (_ origin: TestOrigin, _ mount: MountedImgfs) throws -> Void
) throws {
    let origin = try TestOrigin()
    defer { origin.stop() }
    let mount = try MountedImgfs(arguments: arguments, cacheDirectory: cacheDirectory, environment: environment)
    defer { mount.stop() }
    try body(origin, mount)
}
