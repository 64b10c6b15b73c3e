import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - A stable mtime: the first fetch time, kept across refetches of the same content

extension ImageRepository {
    /// The fetch time to file a complete body with, so that its mtime (``ImageMetadata/modificationTime``) stays what
    /// it was while the content does: the cached copy's fetch time when the origin sends no Last-Modified and the new
    /// body has the cached copy's size, ETag (or none) and CRC-32; the new body's own fetch time otherwise. Called
    /// before the new body replaces the cached copy.
    func keptFetchTime(_ key: String, _ metadata: ImageMetadata, _ bytes: ImageBytes) -> Date {
        guard metadata.lastModified == nil, let previous = tiers.lookup(key),
            previous.metadata.lastModified == nil, previous.metadata.size == metadata.size,
            previous.metadata.etag == metadata.etag, previous.metadata.fetchedAt < metadata.fetchedAt
        else { return metadata.fetchedAt }
        let checksum: (ImageBytes, Int) -> UInt32 = { bytes, size in
            bytes.withSegments(offset: 0, count: size) { pieces in
                pieces.reduce(UInt32(0)) { CRC32.update($0, with: $1) }
            }
        }
        let previousChecksum: UInt32
        switch previous {
        case .memory(let image):
            guard image.bytes.count >= metadata.size else { return metadata.fetchedAt }
            previousChecksum = checksum(image.bytes, metadata.size)
        case .disk(let record):
            guard record.checksum != 0 else { return metadata.fetchedAt }
            previousChecksum = record.checksum
        }
        guard bytes.count >= metadata.size, checksum(bytes, metadata.size) == previousChecksum else {
            return metadata.fetchedAt
        }
        return previous.metadata.fetchedAt
    }
}
