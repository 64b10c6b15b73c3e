import Foundation
import ImgfsModel

extension FetchError {
    /// What the filesystem reports for this failure.
    public var filesystemError: FilesystemError {
        switch self {
        case .httpStatus(404), .httpStatus(410), .notCached: .notFound
        case .httpStatus(401), .httpStatus(403): .accessDenied
        case .timedOut: .timedOut
        case .cancelled: .interrupted
        case .shutDown: .shuttingDown
        case .tooLarge: .fileTooLarge
        case .notAnImage: .notAnImage
        case .refused: .accessDenied
        case .httpStatus, .unresolvable, .unreachable, .truncated, .transport, .changed, .incomplete: .ioFailure
        }
    }
}
