import Glibc
import ImgfsFilesystem
import ImgfsModel

extension FilesystemError {
    /// The errno the kernel is given for this error. docs/SEMANTICS.md holds the same table.
    var errno: Int32 {
        switch self {
        case .notFound: ENOENT
        case .accessDenied: EACCES
        case .timedOut: ETIMEDOUT
        case .ioFailure: EIO
        case .readOnly: EROFS
        case .notADirectory: ENOTDIR
        case .isADirectory: EISDIR
        case .nameTooLong: ENAMETOOLONG
        case .invalidName: EINVAL
        case .interrupted: EINTR
        case .shuttingDown: ECONNABORTED
        case .stale: ESTALE
        case .fileTooLarge: EFBIG
        case .notAnImage: EMEDIUMTYPE
        case .noAttribute: ENODATA
        case .attributesNotSupported: EOPNOTSUPP
        }
    }
}
