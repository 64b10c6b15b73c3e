import Foundation
import ImgfsModel
import ImgfsPipeline

extension VariantError {
    /// What the filesystem reports: the original's error for a failed original, EFBIG for a bomb or a decode over
    /// budget, EIO for an undecodable image, EMEDIUMTYPE for a format that is not rasterized.
    public var filesystemError: FilesystemError {
        switch self {
        case .original(let error): error.filesystemError
        case .tooManyPixels, .decodeTooLarge: .fileTooLarge
        case .undecodable: .ioFailure
        case .notRaster: .notAnImage
        }
    }
}
