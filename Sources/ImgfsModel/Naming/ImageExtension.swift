import Foundation

/// File extensions of image formats, for programs that insist on one.
public enum ImageExtension {
    private static let byContentType: [String: String] = [
        "image/png": "png", "image/apng": "png", "image/jpeg": "jpg", "image/pjpeg": "jpg", "image/gif": "gif",
        "image/webp": "webp", "image/avif": "avif", "image/heic": "heic", "image/heif": "heic", "image/bmp": "bmp",
        "image/x-ms-bmp": "bmp", "image/tiff": "tiff", "image/x-icon": "ico", "image/vnd.microsoft.icon": "ico",
        "image/svg+xml": "svg", "image/jxl": "jxl"
    ]
    private static let known: Set<String> = [
        "png", "jpg", "jpeg", "gif", "webp", "avif", "heic", "heif", "bmp", "tif",
        "tiff", "ico", "svg", "jxl"
    ]

    /// The extension for a Content-Type (parameters ignored), or nil when it is not an image type imgfs knows.
    public static func forContentType(_ type: String) -> String? {
        let bare = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return byContentType[bare]
    }

    /// The extension for an image format found by its signature.
    public static func forFormat(_ format: ImageSignature.Format) -> String {
        switch format {
        case .jpeg: "jpg"
        case .jpegXL: "jxl"
        default: format.rawValue
        }
    }

    /// The extension for the image whose first bytes are `prefix` (see ``ImageSignature/detect(_:)``), or nil.
    public static func forSignature(_ prefix: some Collection<UInt8>) -> String? {
        ImageSignature.detect(prefix).map(forFormat)
    }

    /// Whether `candidate` (lower case, without the dot) is an image extension imgfs knows.
    public static func isKnown(_ candidate: String) -> Bool { known.contains(candidate) }

    /// The image extension the URL's path already ends with, or nil.
    public static func fromPath(of url: ImageURL) -> String? {
        let path = url.resourceKey.split(separator: "?", maxSplits: 1).first ?? ""
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        let candidate = path[path.index(after: dot)...].lowercased()
        return known.contains(candidate) ? candidate : nil
    }
}
