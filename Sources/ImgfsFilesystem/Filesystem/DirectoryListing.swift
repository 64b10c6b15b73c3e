import ImgfsModel

/// A snapshot of a directory taken when it is opened, read in pages.
///
/// For `img/` the snapshot holds only cache keys; the names of one page are worked out when that page is read, so a
/// directory of 100,000 cached images lists without loading every entry's metadata at once.
enum DirectoryListing {
    /// Small directories: every entry.
    case entries([DirectoryEntry])
    /// `img/`: `.` and `..`, then one image per cache key.
    case images(leading: [DirectoryEntry], keys: [String])
    /// A list's directory: `.` and `..`, then its entries, named from the list as each page is read.
    case list(leading: [DirectoryEntry], list: ImageList)

    var count: Int {
        switch self {
        case .entries(let entries): entries.count
        case .images(let leading, let keys): leading.count + keys.count
        case .list(let leading, let list): leading.count + list.entries.count
        }
    }
}
