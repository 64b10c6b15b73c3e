import Foundation
import ImgfsModel
import ImgfsStore

/// Where a request for an image is served from: the memory cache, the disk cache, or a transfer (under way or just
/// finished, whose bytes readers can already read).
public enum ImageSource: Sendable {
    case memory(CachedImage)
    case disk(CacheRecord)
    case download(Download)

    /// The metadata, the whole body when it is in memory, the file of a disk entry when one was opened for the
    /// kernel (``ImageRepository/opening(_:interest:fileAbove:glance:reply:)``), and whether the body is still
    /// arriving (a transfer has not delivered all of it yet).
    public typealias Found = (metadata: ImageMetadata, body: ImageSlice?, file: KernelReadableBody?, arriving: Bool)
    /// Answers a look-up: what was found, or why nothing could be.
    public typealias FoundReply = @Sendable (Result<Found, FetchError>) -> Void

    /// The metadata (and whole body, when in memory) of a resolved source: at once, or when a transfer knows it.
    static func answer(_ result: Result<ImageSource, FetchError>, interest: Interest?, reply: @escaping FoundReply) {
        switch result {
        case .failure(let error):
            reply(.failure(error))
        case .success(.download(let download)):
            download.whenMetadataKnown(interest: interest) { result in
                let body = download.arrivedBody
                reply(result.map { ($0, body, nil, body == nil) })
            }
        case .success(.memory(let image)):
            reply(
                .success(
                    (image.metadata, ImageSlice(bytes: image.bytes, offset: 0, count: image.metadata.size), nil, false)
                ))
        case .success(let source):
            reply(.success((source.metadata!, nil, nil, false)))
        }
    }

    /// The image's metadata as known now (nil for a transfer whose size is not known yet).
    public var metadata: ImageMetadata? {
        switch self {
        case .memory(let image): image.metadata
        case .disk(let record): record.metadata
        case .download(let download): download.currentMetadata
        }
    }

    /// The tier this source is, as extended attributes name it.
    var tier: ImageReport.Source {
        switch self {
        case .memory: .memory
        case .disk: .disk
        case .download: .network
        }
    }

    /// How long the stored response was fresh for (0 for a transfer).
    var lifetime: TimeInterval {
        switch self {
        case .memory(let image): max(0, image.expiresAt.timeIntervalSince(image.validatedAt))
        case .disk(let record): max(0, record.expiresAt.timeIntervalSince(record.lastValidated))
        case .download: 0
        }
    }

    /// Whether the stored response's expiry came from its headers (nil: not known, or a transfer).
    var expiryFromHeaders: Bool? {
        switch self {
        case .memory(let image): image.expiryFromHeaders
        case .disk(let record): record.expiryFromHeaders
        case .download: nil
        }
    }

    /// The numeric address the cached bytes came from, when known.
    var remoteAddress: String? {
        switch self {
        case .memory(let image): image.remoteAddress
        case .disk(let record): record.remoteAddress
        case .download: nil
        }
    }

    /// The conditional request that revalidates this cached copy of `url` (a plain one when nothing validates it).
    func validators(for url: ImageURL) -> FetchRequest {
        guard let metadata else { return FetchRequest(url: url) }
        return FetchRequest(url: url, etag: metadata.etag, lastModified: metadata.lastModified)
    }
}
