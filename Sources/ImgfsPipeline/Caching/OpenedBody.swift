import ImgfsModel
import ImgfsStore

/// What an open file of an image reads from, found by its open
/// (``ImageRepository/opening(_:interest:fileAbove:glance:reply:)``) and held by it, so that its reads need not ask
/// where the URL is served from again: the transfer the open started or joined, the whole body, or a disk-cache
/// entry.
///
/// Guarantees: it is the source that answered the open, so its bytes are the ones of the size the open reported.
public enum OpenedBody: Sendable {
    /// A transfer under way (or just finished): reads wait for their bytes on it.
    case download(Download)
    /// The whole image, in memory.
    case bytes(ImageSlice)
    /// An entry of the disk cache, read from it (a body that fits the memory cache comes into memory at the first
    /// read).
    case disk(CacheRecord)

    /// What the open that resolved to `source` reads from.
    init(_ source: ImageSource) {
        switch source {
        case .download(let download): self = .download(download)
        case .memory(let image): self = .bytes(ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size))
        case .disk(let record): self = .disk(record)
        }
    }
}
