import Foundation
import ImgfsModel
import ImgfsStore

/// What a cache holds under a key (``CacheTiers/lookup(_:counting:)``): a body in memory (in the memory cache, or
/// queued for its disk write), or a disk entry.
///
/// Guarantees: a value; whichever tier answered, `metadata` and `expiresAt` are the entry's own, and a body queued
/// for the disk answers as `.memory` (its bytes are in memory until the write lands).
public enum CachedEntry: Sendable {
    case memory(CachedImage)
    case disk(CacheRecord)

    /// Its metadata: size, type, ETag, Last-Modified and fetch time.
    public var metadata: ImageMetadata {
        switch self {
        case .memory(let image): image.metadata
        case .disk(let record): record.metadata
        }
    }

    /// When it must be revalidated.
    public var expiresAt: Date {
        switch self {
        case .memory(let image): image.expiresAt
        case .disk(let record): record.expiresAt
        }
    }

    /// The URL (without fragment) it was fetched from, a disk record's keyed by `keying` (nil for a disk record whose
    /// URL does not parse).
    public func url(keying: (any CacheKeying)?) -> ImageURL? {
        switch self {
        case .memory(let image): image.url
        case .disk(let record): try? ImageURL(record.url, keying: keying)
        }
    }

    /// The tier, as extended attributes name it.
    var tier: ImageReport.Source {
        switch self {
        case .memory: .memory
        case .disk: .disk
        }
    }
}

extension ImageSource {
    /// The source a cached entry is.
    init(_ entry: CachedEntry) {
        switch entry {
        case .memory(let image): self = .memory(image)
        case .disk(let record): self = .disk(record)
        }
    }
}
