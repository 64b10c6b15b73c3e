import Foundation
import ImgfsStore

/// Whether a stored list warms itself (`imgfs list add --warm`): an empty file `<name>.warm` beside the list's file
/// in the list store, which `imgfs list add` writes or removes with every list it stores and `imgfs list rm` removes.
///
/// Guarantees: the mark never changes a list's file; a mark without its list means nothing (``ListWarmer`` warms only
/// a list whose file and mark both exist); names are checked by ``ListStore/validate(_:)`` before any path is made.
public enum ListWarmMark {
    static let suffix = ".warm"

    /// Marks the list `name` of `store` for warming, or removes its mark.
    public static func set(_ warm: Bool, list name: String, in store: ListStore) throws {
        try ListStore.validate(name)
        let path = self.path(of: name, in: store.directory)
        if warm {
            try FileManager.default.createDirectory(
                at: store.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let fd = try DiskCacheIO.open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode: 0o600)
            try DiskCacheIO.close(fd, path: path)
        } else if FileManager.default.fileExists(atPath: path) {
            try FileManager.default.removeItem(atPath: path)
        }
    }

    /// Whether the list `name` of `store` is marked for warming.
    public static func isSet(list name: String, in store: ListStore) -> Bool {
        guard (try? ListStore.validate(name)) != nil else { return false }
        return access(path(of: name, in: store.directory), F_OK) == 0
    }

    /// The stored list's file's modification time, or nil when it is missing.
    static func listStamp(_ name: String, in store: ListStore) -> Date? {
        let path = store.directory.appendingPathComponent(name + ListStore.suffix).path
        return (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }

    private static func path(of name: String, in directory: URL) -> String {
        directory.appendingPathComponent(name + suffix).path
    }
}
