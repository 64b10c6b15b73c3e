import ImgfsModel

/// The version of each list that the last lookup of its name (`lists/NAME`) found, so that a list replaced since can
/// have its entries dropped in the kernel (which keeps them long: ``ImageFilesystem/browseEntryTimeout``).
///
/// Guarantees: thread safe; a version is the loaded list itself (its storage), held until the next lookup of the name
/// or until the list is gone, so a new version is never taken for the old one.
final class ListVersions: Sendable {
    private let seen = Locked<[String: ImageList]>([:])

    /// Records `list` as the version of `name` looked up now; true when a lookup found another version before.
    func changed(_ name: String, to list: ImageList) -> Bool {
        seen.withLock { seen in
            guard let old = seen.updateValue(list, forKey: name) else { return false }
            return old.entries.storage !== list.entries.storage
        }
    }

    /// The list `name` is gone.
    func forget(_ name: String) {
        _ = seen.withLock { $0.removeValue(forKey: name) }
    }
}
