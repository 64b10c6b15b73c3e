import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - A stable mtime: the first fetch time, kept across refetches of the same content

extension ImageRepository {
    /// The fetch time a refetch reports from its head on, when it looks like the cached copy it replaces: no
    /// Last-Modified on either, the same size and ETag (or none). ``keptFetchTime(_:_:_:)`` checks the body once it
    /// is complete.
    func tentativeFetchTime(_ fallback: ImageSource, _ head: ResponseHead) -> Date? {
        let previous: ImageMetadata
        switch fallback {
        case .memory(let image): previous = image.metadata
        case .disk(let record): previous = record.metadata
        case .download: return nil
        }
        guard previous.lastModified == nil,
            head.lastModified == nil, head.contentLength == previous.size, head.etag == previous.etag
        else { return nil }
        return previous.fetchedAt
    }

    /// The fetch time to file a complete body with, so that its mtime (``ImageMetadata/modificationTime``) stays what
    /// it was while the content does: the cached copy's fetch time when the origin sends no Last-Modified and the new
    /// body has the cached copy's size, ETag (or none) and CRC-32; otherwise the body's own fetch time (now, when the
    /// transfer reported the cached copy's tentatively and the body differs). Called before the new body replaces the
    /// cached copy.
    func keptFetchTime(_ key: String, _ metadata: ImageMetadata, _ bytes: ImageBytes) -> Date {
        guard metadata.lastModified == nil, let previous = tiers.lookup(key), previous.metadata.lastModified == nil
        else { return metadata.fetchedAt }
        let tentative = previous.metadata.fetchedAt == metadata.fetchedAt
        let differs = tentative ? now() : metadata.fetchedAt
        guard previous.metadata.size == metadata.size, previous.metadata.etag == metadata.etag else { return differs }
        let checksum: (ImageBytes, Int) -> UInt32 = { bytes, size in
            bytes.withSegments(offset: 0, count: size) { pieces in
                pieces.reduce(UInt32(0)) { CRC32.update($0, with: $1) }
            }
        }
        let previousChecksum: UInt32
        switch previous {
        case .memory(let image):
            guard image.bytes.count >= metadata.size else { return differs }
            previousChecksum = checksum(image.bytes, metadata.size)
        case .disk(let record):
            guard record.checksum != 0 else { return differs }
            previousChecksum = record.checksum
        }
        guard bytes.count >= metadata.size, checksum(bytes, metadata.size) == previousChecksum else { return differs }
        return previous.metadata.fetchedAt
    }
}
