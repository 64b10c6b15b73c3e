import Foundation
import ImgfsModel
import ImgfsStore

/// The user's thumbnail cache of the freedesktop.org Thumbnail Managing Standard (`$XDG_CACHE_HOME/thumbnails`, else
/// `~/.cache/thumbnails`), which GIO, Nautilus, pcmanfm, Thunar and Dolphin read before making a thumbnail of their
/// own.
///
/// Guarantees: a thumbnail is written whole (a temporary file in the same folder renamed over the old one), mode 0600
/// in folders created 0700, named `md5(uri).png` in its size's folder, with `Thumb::URI` = `uri` exactly and the
/// `Thumb::MTime` and `Thumb::Size` given (which must be the file's `stat` values); a failure marker is a 1 × 1 PNG
/// with the same keys in `fail/gnome-thumbnail-factory/`, and a successful write removes the marker of the same URI.
public struct DesktopThumbnailCache: Sendable {
    /// The cache's root (`…/thumbnails`).
    public let directory: URL

    /// The failure folder GIO and GNOME's thumbnail factory read.
    static let failureFolder = "fail/gnome-thumbnail-factory"

    /// The cache under `directory`.
    public init(directory: URL) {
        self.directory = directory
    }

    /// `$XDG_CACHE_HOME/thumbnails` when it is set to an absolute path, else `$HOME/.cache/thumbnails`.
    public static func userCache(
        environment: [String: String] = ProcessInfo.processInfo.environment
    )
        -> DesktopThumbnailCache
    {
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"] ?? NSHomeDirectory()) + "/.cache"
        }
        return DesktopThumbnailCache(directory: URL(fileURLWithPath: base).appendingPathComponent("thumbnails"))
    }

    /// Where the thumbnail of `uri` of `size` goes.
    public func path(of uri: String, size: DesktopThumbnailSize) -> String {
        directory.appendingPathComponent(size.folder).appendingPathComponent(MD5.hex(of: Array(uri.utf8)) + ".png").path
    }

    /// Where the failure marker of `uri` goes.
    public func failurePath(of uri: String) -> String {
        directory.appendingPathComponent(Self.failureFolder)
            .appendingPathComponent(MD5.hex(of: Array(uri.utf8)) + ".png").path
    }

    /// Writes `png` (a thumbnail, its text chunks replaced) as the thumbnail of `uri` of `size`, for a file of mtime
    /// `modified` seconds and `fileSize` bytes; removes a failure marker of `uri`.
    public func write(png: [UInt8], uri: String, size: DesktopThumbnailSize, modified: Int, fileSize: Int) throws {
        let text = ThumbnailPNG.keys(uri: uri, modified: modified, size: fileSize)
        guard let file = ThumbnailPNG.replacingText(of: png, with: text) else {
            throw DesktopThumbnailCacheError(reason: "the thumbnail is not a PNG")
        }
        try store(file, at: path(of: uri, size: size))
        _ = try? DiskCacheIO.unlink(failurePath(of: uri))
    }

    /// Writes the failure marker of `uri` (a file of mtime `modified` seconds): programs stop trying to thumbnail it
    /// until it changes.
    public func writeFailure(uri: String, modified: Int) throws {
        let text = ThumbnailPNG.keys(uri: uri, modified: modified)
        try store(ThumbnailPNG.bytes(ofPNG: Self.onePixel, text: text), at: failurePath(of: uri))
    }

    /// A transparent 1 × 1 PNG.
    static let onePixel: [UInt8] = [
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
        0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01, 0x7a, 0x5e,
        0xab, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82
    ]

    /// Writes `bytes` to `path` whole: a temporary file (0600) renamed over it, its folders made 0700.
    private func store(_ bytes: [UInt8], at path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let process = ProcessInfo.processInfo.processIdentifier
        let temporary = "\(folder)/.imgfs-\(process)-\(UInt64.random(in: 0...UInt64.max)).tmp"
        do {
            let fd = try DiskCacheIO.open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            do {
                try bytes.withUnsafeBytes { try DiskCacheIO.writeAll(fd, $0, path: temporary) }
            } catch {
                try? DiskCacheIO.close(fd, path: temporary)
                throw error
            }
            try DiskCacheIO.close(fd, path: temporary)
            try DiskCacheIO.rename(temporary, to: path)
        } catch {
            _ = try? DiskCacheIO.unlink(temporary)
            throw error
        }
    }
}

/// A thumbnail could not be written to the user's cache.
public struct DesktopThumbnailCacheError: Error, CustomStringConvertible {
    /// Why, in one line.
    public let reason: String

    /// The reason.
    public var description: String { reason }
}
