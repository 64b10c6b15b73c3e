import CFuse
import Foundation

/// Asks a running mount to act by setting an extended attribute on a file in it (the mount's one control channel;
/// see `ImageFilesystem.setExtendedAttribute`).
public enum MountControl {
    /// Why the mount could not be asked: what failed and the system's error.
    public struct Failure: Error, CustomStringConvertible {
        /// One line that says why.
        public let description: String
    }

    /// The value of extended attribute `name` of `path`, or nil.
    public static func get(_ name: String, on path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { getxattr(path, name, $0.baseAddress, $0.count) }
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Sets `name` to `value` on `path`.
    public static func set(_ name: String, to value: String, on path: String) throws {
        guard setxattr(path, name, value, value.utf8.count, 0) == 0 else {
            throw Failure(description: "cannot set \(name) on \(path): \(String(cString: strerror(errno)))")
        }
    }
}
