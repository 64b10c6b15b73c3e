import ArgumentParser
import Foundation

/// A mount's `.imgfs/stats.json`, for the commands that talk to a running mount.
enum StatisticsFile {
    /// The file's bytes, or a clear error when `mountPoint` is not an imgfs mount.
    static func read(_ mountPoint: String) throws -> Data {
        let path = "\(mountPoint)/.imgfs/stats.json"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(mountPoint) is not an imgfs mount (no readable \(path))")
        }
        return data
    }
}
