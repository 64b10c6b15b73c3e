import ImgfsModel

/// Tells the one who asked (the filesystem) when a cached image's bytes are being replaced by a new body, or dropped
/// because the origin says the image is gone, so that the kernel drops the pages and attributes it cached.
///
/// Guarantees: the handler is called on the thread that learned of the change, before anyone is served the new bytes
/// (but for a probe's continuation while reads of the image wait: then at once on another thread, since the kernel's
/// invalidation waits for those reads; ``ImageRepository/installProbe(_:fetcher:)``); a later ``observe(_:)`` replaces
/// an earlier handler.
final class ContentChangeAnnouncer: Sendable {
    private let handler = LockedCallback<ImageURL, Void>()

    func observe(_ handler: @escaping @Sendable (ImageURL) -> Void) {
        self.handler.install(handler)
    }

    func announce(_ url: ImageURL) {
        handler(url)
    }
}
