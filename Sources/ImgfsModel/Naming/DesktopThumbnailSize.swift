/// The sizes of the freedesktop.org Thumbnail Managing Standard: the folders `normal/`, `large/`, `x-large/` and
/// `xx-large/` of a thumbnail directory, with the longest side of their thumbnails.
public enum DesktopThumbnailSize: String, CaseIterable, Sendable, Hashable {
    /// 128 pixels.
    case normal
    /// 256 pixels.
    case large
    /// 512 pixels.
    case xLarge = "x-large"
    /// 1024 pixels.
    case xxLarge = "xx-large"

    /// The longest side of its thumbnails in pixels.
    public var pixels: Int {
        switch self {
        case .normal: 128
        case .large: 256
        case .xLarge: 512
        case .xxLarge: 1024
        }
    }

    /// Its folder's name.
    public var folder: String { rawValue }

    /// The size whose folder is called `folder`.
    public init?(folder: String) { self.init(rawValue: folder) }
}
