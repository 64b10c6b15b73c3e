import Foundation
import ImgfsModel

// MARK: - The placeholder: what a failed image reads as when `--placeholder` is given

extension ImageFilesystem {
    /// The attributes of a failed image when a placeholder is served for it: the placeholder's size, not cached by
    /// the kernel (the URL may work on the next try).
    func placeholderEntry(_ inode: UInt64) -> Entry? {
        guard let placeholder else { return nil }
        let attributes = Attributes(
            inode: inode, kind: .file, size: placeholder.bytes.count, permissions: 0o444,
            modified: startTime, linkCount: 1)
        return Entry(attributes: attributes, entryTimeout: configuration.entryTimeout, attributeTimeout: 0)
    }

    /// `result`, or the placeholder's entry when it failed and a placeholder is served.
    /// (`inode` is asked for only then: a failed lookup without a placeholder allocates no inode.)
    func orPlaceholder(
        _ inode: @autoclosure () -> UInt64,
        _ result: Result<Entry, FilesystemError>
    ) -> Result<Entry, FilesystemError> {
        guard case .failure = result, placeholder != nil, let entry = placeholderEntry(inode()) else { return result }
        return .success(entry)
    }

    /// Opens the placeholder in place of the image `url`, whose fetch failed with `error`; nil without a placeholder.
    /// The error stays what `user.imgfs.error` and the log say.
    func openPlaceholder(_ url: ImageURL, error: FilesystemError) -> OpenFile? {
        guard let placeholder else { return nil }
        placeholder.markServed()
        logger.info("serving the placeholder", metadata: ["url": "\(url)", "error": "\(error)"])
        return OpenFile(handle: handles.open(.bytes(placeholder.bytes)).handle, directIO: true)
    }
}
