import ImgfsModel
import ImgfsPipeline

/// What a node of the desktop views stands for: the shared thumbnail repository of a list or a host
/// (`lists/NAME/.sh_thumbnails/<size>/<md5>.png`, the freedesktop.org Thumbnail Managing Standard), and the thumbnails
/// of a list's or host's entries by their readable names (`thumb/<px>/lists/NAME/<entry>`).
public enum DesktopNode: Hashable, Sendable {
    /// A folder of readable names: a list or a host.
    public enum Folder: Hashable, Sendable {
        /// `lists/NAME/`.
        case list(String)
        /// `hosts/HOST/`.
        case host(String)
    }

    /// `.sh_thumbnails/` in a folder: one directory per size of the standard.
    case repository(Folder)
    /// `.sh_thumbnails/<size>/`: one PNG per entry of the folder.
    case repositorySize(Folder, DesktopThumbnailSize)
    /// `.sh_thumbnails/<size>/<md5 of name>.png`: the thumbnail of the folder's entry `name`, the image `url`.
    case thumbnail(Folder, DesktopThumbnailSize, name: String, url: ImageURL)
    /// `thumb/<px>/lists/` (`hosts`: false) or `thumb/<px>/hosts/` (true), and the same under `thumb/<W>x<H>/` and
    /// `fmt/<format>/`: the kind is the directory's (``VariantKind/directory``).
    case readableRoot(VariantKind, hosts: Bool)
    /// `thumb/<px>/lists/NAME/` or `thumb/<px>/hosts/HOST/`: each entry of the folder, by its name, is the variant of
    /// its image that `thumb/<px>/` gives for that name (its extension says the encoding). Under `fmt/<format>/`
    /// each entry is the view of its image by its name with the view's extension (``FormatViewNameIndex``).
    case readableFolder(VariantKind, Folder)

    /// Whether it is a file (a thumbnail) rather than a directory.
    var isFile: Bool {
        if case .thumbnail = self { return true }
        return false
    }

    /// The name of the shared repository's directory in a folder.
    static let repositoryDirectory = ".sh_thumbnails"
}
