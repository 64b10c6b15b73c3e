import Foundation
import ImgfsModel
import ImgfsPipeline

/// Writes the thumbnails of a mount's list entries into the user's thumbnail cache (``DesktopThumbnailCache``), reading
/// each from the list's shared repository through the mount (`lists/NAME/.sh_thumbnails/<size>/<md5>.png`: the daemon
/// makes it once from the original, with libvips) and naming it by the entry's `file://` URI as GLib builds it.
///
/// Guarantees: each entry is `stat`ed through the mount and its thumbnail carries that `stat`'s mtime and size, so
/// GIO finds it valid; an entry that does not exist (a failed image) gets nothing; an entry whose thumbnail cannot be
/// made gets the standard's failure marker; a thumbnail already in the cache for the same URI and mtime is left as it
/// is.
struct DesktopThumbnailWriter: Sendable {
    /// What happened to one entry.
    enum Outcome: Sendable {
        /// Thumbnails written (or already there) for every size.
        case written
        /// Already in the cache, valid.
        case current
        /// The thumbnail could not be made: a failure marker was written; the text says why.
        case failed(String)
        /// The entry does not exist (its image failed: `imgfs why` says why).
        case missing
        /// The cache could not be written; the text says why.
        case error(String)
    }

    /// The mount's absolute path, as the mount table has it.
    let mount: String
    let cache: DesktopThumbnailCache
    /// The sizes written (the standard's `normal` and `large`, which file managers ask for): `large` first, so that the
    /// mount makes `normal` from it rather than from the original.
    let sizes: [DesktopThumbnailSize] = [.large, .normal]

    /// Writes the thumbnails of the entry `entry` of list `list`.
    func thumbnail(list: String, entry: String) -> Outcome {
        let path = "\(mount)/lists/\(list)/\(entry)"
        guard var facts = Self.status(path) else { return .missing }
        let uri = FileURI.string(forAbsolutePath: path)
        if sizes.allSatisfy({ isCurrent(uri: uri, size: $0, facts: facts) }) { return .current }
        for size in sizes {
            let repository =
                "\(mount)/lists/\(list)/.sh_thumbnails/\(size.folder)/"
                + MD5.hex(of: Array(entry.utf8)) + ".png"
            let read = Self.readWhole(repository)
            guard let png = read.bytes else {
                let code = read.errno
                let reason = "no thumbnail could be made (" + String(cString: strerror(code)) + ")"
                do {
                    try cache.writeFailure(uri: uri, modified: facts.modified)
                } catch {
                    return .error("\(error)")
                }
                return .failed(reason)
            }
            let made = Self.facts(ofThumbnail: png)
            if made != facts {
                // The entry changed since it was stat'ed (refetched): its attributes now.
                guard let now = Self.status(path), now == made else {
                    return .error("the entry changed while its thumbnail was made")
                }
                facts = now
            }
            do {
                try cache.write(png: png, uri: uri, size: size, modified: facts.modified, fileSize: facts.size)
            } catch {
                return .error("\(error)")
            }
        }
        return .written
    }

    /// Whether the cache holds a thumbnail of `uri` of `size` for a file of `facts`.
    private func isCurrent(uri: String, size: DesktopThumbnailSize, facts: VariantStore.DesktopFacts) -> Bool {
        guard let png = FileManager.default.contents(atPath: cache.path(of: uri, size: size)).map(Array.init) else {
            return false
        }
        let text = ThumbnailPNG.text(of: png)
        return text.first { $0.key == "Thumb::URI" }?.value == uri && Self.facts(ofThumbnail: png) == facts
    }

    /// The whole file at `path`, or nil and the errno that ended the attempt.
    static func readWhole(_ path: String) -> (bytes: [UInt8]?, errno: Int32) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return (nil, errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return (bytes, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                return (nil, errno)
            }
            bytes += buffer[0..<count]
        }
    }

    /// The mtime (seconds) and size `stat` gives for `path`, or nil when it does not exist.
    static func status(_ path: String) -> VariantStore.DesktopFacts? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return VariantStore.DesktopFacts(modified: Int(status.st_mtim.tv_sec), size: Int(status.st_size))
    }

    /// The `Thumb::MTime` and `Thumb::Size` of a thumbnail.
    static func facts(ofThumbnail png: [UInt8]) -> VariantStore.DesktopFacts? {
        let text = ThumbnailPNG.text(of: png)
        guard let modified = text.first(where: { $0.key == "Thumb::MTime" }).flatMap({ Int($0.value) }),
            let size = text.first(where: { $0.key == "Thumb::Size" }).flatMap({ Int($0.value) })
        else { return nil }
        return VariantStore.DesktopFacts(modified: modified, size: size)
    }
}
