import Foundation

/// Where imgfs keeps its files.
enum CacheDirectory {
    /// `$XDG_CACHE_HOME/imgfs`, else `~/.cache/imgfs`.
    static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/imgfs" }
        return "\(environment["HOME"] ?? NSHomeDirectory())/.cache/imgfs"
    }

    /// Creates `directory` with mode 0700 when missing.
    static func create(_ directory: URL) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }
}
