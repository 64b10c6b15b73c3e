import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsWorkers
import Logging

/// Writes the thumbnails of list entries into the user's thumbnail cache as they are opened (`--tune
/// desktop-thumbnails=on`), as `imgfs thumbnails --desktop` does for whole lists: `normal/` and `large/` PNGs named by
/// the MD5 of the entry's `file://` URI under the mount point, with its mtime and size.
///
/// Guarantees: never runs on a thread serving the kernel (one thread of its own; the thumbnails are made on the
/// variants' workers once the original is complete); each entry, size and mtime is written at most once while the
/// daemon runs (bounded memory of what was written); a thumbnail that cannot be made gets the standard's failure
/// marker, an entry whose image failed gets nothing.
public final class DesktopCacheFeeder: Sendable {
    let mountPoint: String
    let cache: DesktopThumbnailCache
    let variants: VariantStore
    let logger: Logger
    private let queue = WorkerPool(name: "imgfs-desktop-cache")
    private let written = Locked<Set<String>>([])
    static let writtenLimit = 100_000
    static let sizes: [DesktopThumbnailSize] = [.large, .normal]

    /// A feeder for the mount at `mountPoint` (absolute, as the mount table has it) writing into `cache`.
    public init(mountPoint: String, cache: DesktopThumbnailCache, variants: VariantStore, logger: Logger) {
        self.mountPoint = mountPoint
        self.cache = cache
        self.variants = variants
        self.logger = logger
    }

    /// Runs `job` on the feeder's own thread.
    func submit(_ job: @escaping @Sendable () -> Void) { queue.submit(job) }

    /// The entry `entry` of list `list`, the image `url`, was opened.
    func opened(list: String, entry: String, url: ImageURL) {
        let uri = FileURI.string(forAbsolutePath: "\(mountPoint)/lists/\(list)/\(entry)")
        make(Self.sizes[...], uri: uri, url: url.withoutFragment)
    }

    /// Makes and writes `sizes` one after the other (largest first: each smaller one is made from it).
    private func make(_ sizes: ArraySlice<DesktopThumbnailSize>, uri: String, url: ImageURL) {
        guard let size = sizes.first else { return }
        variants.desktopThumbnail(size, of: url, refresh: false) { [self] result in
            queue.submit { [self] in
                write(result, uri: uri, size: size, url: url)
                make(sizes.dropFirst(), uri: uri, url: url)
            }
        }
    }

    private func write(
        _ result: Result<VariantStore.Variant, VariantError>, uri: String, size: DesktopThumbnailSize,
        url: ImageURL
    ) {
        switch result {
        case .failure(.original):
            return  // The entry does not exist: nothing to thumbnail.
        case .failure(let error):
            guard let modified = variants.originalModificationSeconds(url),
                remember("fail \(uri) \(modified)")
            else { return }
            do {
                try cache.writeFailure(uri: uri, modified: modified)
            } catch {
                logger.warning("could not write a thumbnail failure marker: \(error)", metadata: ["uri": "\(uri)"])
            }
            logger.debug("desktop thumbnail failed: \(error)", metadata: ["uri": "\(uri)"])
        case .success(let variant):
            guard let facts = VariantStore.desktopFacts(of: variant),
                remember("\(size.folder) \(uri) \(facts.modified) \(facts.size)"),
                let png = variants.desktopPNG(variant, of: url)
            else { return }
            do {
                try cache.write(png: png, uri: uri, size: size, modified: facts.modified, fileSize: facts.size)
            } catch {
                logger.warning("could not write a desktop thumbnail: \(error)", metadata: ["uri": "\(uri)"])
            }
        }
    }

    /// Whether `item` is new (and remembers it).
    private func remember(_ item: String) -> Bool {
        written.withLock { written in
            if written.count >= Self.writtenLimit { written.removeAll() }
            return written.insert(item).inserted
        }
    }
}
