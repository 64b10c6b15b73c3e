import Foundation
import Glibc

/// Where imgfs keeps its files, and the check that they are the daemon's own.
///
/// Guarantees: ``prepare(_:)`` returns only when the cache directory and every folder imgfs keeps in it that exists
/// (`v1/` and its subfolders, `variants/`, `variants/v1/` and its subfolders, `lists/`, `names/`) is a real directory
/// (not a symbolic link) owned by the daemon's user and writable by nobody else, and when the files it writes there by
/// fixed names (`imgfs.log`, the `lock` files) are not symbolic links and are the daemon's; otherwise it throws
/// ``Refused`` saying which path and why. Another user who could write there could plant a symbolic link that makes
/// the daemon (often root) write where they cannot.
enum CacheDirectory {
    /// A cache directory imgfs will not use.
    struct Refused: Error, CustomStringConvertible {
        let description: String
    }

    /// `$XDG_CACHE_HOME/imgfs`, else `~/.cache/imgfs`.
    static var defaultPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/imgfs" }
        return "\(environment["HOME"] ?? NSHomeDirectory())/.cache/imgfs"
    }

    /// The folders imgfs keeps in the cache directory, and (their entries are checked too) those holding one folder
    /// per two hex digits of a key.
    static let folders = ["v1", "variants", "variants/v1", "lists", "names"]
    static let keyedFolders = ["v1", "variants/v1"]
    /// The files imgfs opens in the cache directory by fixed names.
    static let files = ["imgfs.log", "v1/lock", "variants/v1/lock"]

    /// Creates `directory` with mode 0700 when missing, then checks it (see the type's guarantees).
    static func prepare(_ directory: URL, owner: uid_t = geteuid()) throws {
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try check(directory.path, owner: owner)
    }

    /// Checks the cache directory `path` and what imgfs keeps in it (see the type's guarantees).
    static func check(_ path: String, owner: uid_t = geteuid()) throws(Refused) {
        // The directory itself may be reached through a symbolic link the user made (~/.cache on another disk).
        guard let status = fileStatus(path, follow: true) else {
            let reason = String(cString: strerror(errno))
            throw Refused(description: "the cache directory \(path) cannot be read: \(reason)")
        }
        try checkDirectory(path, status, owner: owner, what: "the cache directory")
        for folder in folders {
            let folderPath = "\(path)/\(folder)"
            guard let status = fileStatus(folderPath, follow: false) else { continue }
            try checkDirectory(folderPath, status, owner: owner, what: "the cache folder")
        }
        for folder in keyedFolders {
            let folderPath = "\(path)/\(folder)"
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folderPath) else { continue }
            for name in names {
                let entry = "\(folderPath)/\(name)"
                guard let status = fileStatus(entry, follow: false) else { continue }
                if status.st_mode & S_IFMT == S_IFLNK {
                    throw Refused(description: "\(entry) is a symbolic link: imgfs never follows one in its cache")
                }
                if status.st_mode & S_IFMT == S_IFDIR {
                    try checkDirectory(entry, status, owner: owner, what: "the cache folder")
                }
            }
        }
        for file in files {
            let filePath = "\(path)/\(file)"
            guard let status = fileStatus(filePath, follow: false) else { continue }
            if status.st_mode & S_IFMT == S_IFLNK {
                throw Refused(description: "\(filePath) is a symbolic link: imgfs never follows one in its cache")
            }
            if status.st_uid != owner {
                throw Refused(description: "\(filePath) belongs to user \(status.st_uid), not to this user (\(owner))")
            }
        }
    }

    private static func checkDirectory(_ path: String, _ status: stat, owner: uid_t, what: String) throws(Refused) {
        switch status.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK:
            throw Refused(description: "\(what) \(path) is a symbolic link: imgfs never follows one in its cache")
        default: throw Refused(description: "\(what) \(path) is not a directory")
        }
        if status.st_uid != owner {
            throw Refused(
                description: "\(what) \(path) belongs to user \(status.st_uid), not to this user (\(owner)): "
                    + "another user could plant links in it; use a directory of your own")
        }
        let mode = status.st_mode & 0o777
        if mode & 0o022 != 0 {
            throw Refused(
                description: "\(what) \(path) is writable by "
                    + (mode & 0o002 != 0 ? "every user" : "its group") + " (mode \(String(mode, radix: 8))): "
                    + "another user could plant links in it; chmod go-w \(path)")
        }
    }

    /// `stat` (or `lstat`) of `path`; nil when it does not exist or cannot be read (errno says why).
    private static func fileStatus(_ path: String, follow: Bool) -> stat? {
        var info = stat()
        let result = follow ? stat(path, &info) : lstat(path, &info)
        return result == 0 ? info : nil
    }
}
