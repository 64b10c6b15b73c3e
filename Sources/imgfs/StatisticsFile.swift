import ArgumentParser
import Foundation
import Glibc

/// A mount's `.imgfs/stats.json`, for the commands that talk to a running mount.
enum StatisticsFile {
    /// The file's bytes, or a clear error when `mountPoint` is not an imgfs mount or is another user's (whose
    /// statistics are its owner's and root's).
    static func read(_ mountPoint: String) throws -> Data {
        let path = "\(mountPoint)/.imgfs/stats.json"
        if let data = FileManager.default.contents(atPath: path) { return data }
        try requireMount(mountPoint)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        let code = descriptor < 0 ? errno : EIO
        if descriptor >= 0 { close(descriptor) }
        let owners = code == EACCES ? " (a mount's statistics are its owner's and root's)" : ""
        throw ValidationError("cannot read \(path): \(String(cString: strerror(code)))\(owners)")
    }

    /// Throws a clear error when `mountPoint` is not an imgfs mount (its `.imgfs/stats.json` does not exist).
    static func requireMount(_ mountPoint: String) throws {
        let path = "\(mountPoint)/.imgfs/stats.json"
        guard FileManager.default.fileExists(atPath: path) else {
            throw ValidationError("\(mountPoint) is not an imgfs mount (no \(path))")
        }
    }
}
