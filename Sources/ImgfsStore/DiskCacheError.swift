import ImgfsModel

/// Why a ``DiskCache`` operation failed. Whatever the error, no partial entry is left behind.
public enum DiskCacheError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file system is full (`ENOSPC`, `EDQUOT`); the write was abandoned and its temporary file removed.
    case noSpace
    /// Any other system error, described with the operation, the path and the errno text.
    case io(String)
    /// The entry with this key failed verification (checksum, size, missing file or mismatching record); it has been
    /// removed, so the caller should fetch the image again.
    case corrupt(String)
    /// No entry has this key (it may have been evicted or removed meanwhile).
    case notFound(String)
    /// The key is not 64 lower-case hexadecimal characters.
    case invalidKey(String)
    /// A negative offset or count, or a similar caller error.
    case invalidArgument(String)

    /// A one-line explanation for logs.
    public var description: String {
        switch self {
        case .noSpace: "no space left for the disk cache"
        case .io(let detail): "disk cache I/O error: \(detail)"
        case .corrupt(let key): "disk cache entry \(key) is corrupt"
        case .notFound(let key): "disk cache has no entry \(key)"
        case .invalidKey(let key): "invalid disk cache key \"\(key)\""
        case .invalidArgument(let detail): "invalid disk cache argument: \(detail)"
        }
    }
}
