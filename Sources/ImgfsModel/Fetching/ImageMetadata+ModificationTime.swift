import Foundation

extension ImageMetadata {
    /// The file's mtime: Last-Modified when the origin sent it, else the time the image was first fetched (kept across
    /// refetches of the same content), in whole seconds, so that `stat`, a thumbnail's `Thumb::MTime` and a remount
    /// agree to the second.
    public var modificationTime: Date {
        let seconds = (lastModified ?? fetchedAt).timeIntervalSince1970
        return Date(timeIntervalSince1970: seconds.isFinite ? seconds.rounded(.down) : 0)
    }

    /// ``modificationTime`` as whole seconds since 1970, as `Thumb::MTime` writes it.
    public var modificationSeconds: Int {
        Int(saturating: modificationTime.timeIntervalSince1970)
    }
}
