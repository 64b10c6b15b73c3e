import Foundation
import ImgfsModel

/// What a node under `thumb/` stands for.
public enum ThumbnailNode: Hashable, Sendable {
    /// `thumb/`: one directory per allowed size.
    case root
    /// `thumb/<px>/`.
    case size(Int)
    /// `thumb/<px>/<name>`: the variant of longer side `size` of the image `url`.
    case image(size: Int, url: ImageURL)
}

// MARK: - Thumbnails and downsized variants (thumb/<px>/<name>)

extension ImageFilesystem {
    static let thumbnailDirectory = "thumb"

    /// The node `name` stands for in a `thumb/` directory. Sizes that are not configured are not found; names are
    /// read as under `img/` (plain and digest names; chunked names are not supported here).
    func resolveThumbnail(_ name: [UInt8], in directory: ThumbnailNode) -> Result<Node, FilesystemError> {
        guard let variants else { return .failure(.notFound) }
        switch directory {
        case .root:
            let text = String(decoding: name, as: UTF8.self)
            guard let size = Int(text), String(size) == text, variants.allows(size) else { return .failure(.notFound) }
            return .success(.thumbnail(.size(size)))
        case .size(let size):
            guard name != Array(ImagePath.chunkDirectory.utf8) else { return .failure(.notFound) }
            if let node = readableRootNode(name, size: size) { return .success(node) }
            return resolve(name, in: .images).flatMap { node in
                guard case .image(let url) = node else { return .failure(.notFound) }
                return .success(.thumbnail(.image(size: size, url: url.withoutFragment)))
            }
        case .image:
            return .failure(.notADirectory)
        }
    }

    /// The entry of a variant at once (its size is not known until it is made: getattr waits for it); starts making it.
    func lookupVariant(_ size: Int, _ url: ImageURL) -> Entry {
        let inode = inodes.lookUp(.thumbnail(.image(size: size, url: url)))
        variants?.variant(size, of: url, refresh: true) { _ in }
        // A variant that is made anywhere answers with its size: a size 0 would cut short the reads under way.
        if let made = variants?.report(size, of: url).variant { return imageEntry(inode, made.metadata) }
        return unknownSizeEntry(inode)
    }

    /// getattr of a variant: once it is made. One whose failure is known already answers at once with size 0 (as an
    /// image does), so its `user.imgfs.error` can be read; its open and reads fail with the error.
    func variantAttributes(_ inode: UInt64, _ size: Int, _ url: ImageURL, reply: @escaping AttributesReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        if variants.knownFailure(size, of: url) != nil {
            return reply(.success(unknownSizeEntry(inode)))
        }
        variants.variant(size, of: url, refresh: false) { [self] result in
            reply(result.map { imageEntry(inode, $0.metadata) }.mapError(\.filesystemError))
        }
    }

    /// open of a variant: once it is made (an expired one revalidated through its original first).
    func openVariant(_ size: Int, _ url: ImageURL, reply: @escaping OpenReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        variants.variant(size, of: url, refresh: true) { result in
            reply(result.map { _ in OpenFile(handle: 0, directIO: false) }.mapError(\.filesystemError))
        }
    }

    /// read of a variant.
    func readVariant(_ size: Int, _ url: ImageURL, offset: Int, count: Int, reply: @escaping ReadReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        variants.read(size, of: url, offset: offset, count: count) { reply($0.mapError(\.filesystemError)) }
    }

    /// `rm thumb/<px>/<name>` evicts that variant.
    func unlinkVariant(_ name: [UInt8], in directory: ThumbnailNode) -> Result<Void, FilesystemError> {
        switch resolveThumbnail(name, in: directory) {
        case .success(.thumbnail(.image(let size, let url))):
            variants?.evict(size, of: url)
            return .success(())
        case .success: return .failure(.readOnly)
        case .failure(let error): return .failure(error)
        }
    }

    /// `thumb/` in the root listing, when there are variants.
    func thumbnailRootEntry() -> [DirectoryEntry] {
        guard variants != nil else { return [] }
        let inode = inodes.existingInode(.thumbnail(.root)) ?? Self.pseudoInode("")
        return [DirectoryEntry(name: Self.thumbnailDirectory, inode: inode, kind: .directory)]
    }

    /// `thumb/` lists the sizes; `thumb/<px>/` the cached variants of that size.
    func thumbnailListing(_ node: ThumbnailNode, leading: [DirectoryEntry]) -> DirectoryListing? {
        guard let variants else { return nil }
        switch node {
        case .root:
            return .entries(
                leading
                    + variants.configuration.sizes.map { size in
                        let inode =
                            inodes.existingInode(.thumbnail(.size(size))) ?? Self.pseudoInode(String(size, radix: 16))
                        return DirectoryEntry(name: String(size), inode: inode, kind: .directory)
                    })
        case .size(let size):
            return .entries(
                leading
                    + variants.cachedVariants(size).map { key, url in
                        let inode =
                            inodes.existingInode(.thumbnail(.image(size: size, url: url))) ?? Self.pseudoInode(key)
                        return DirectoryEntry(name: listedName(url), inode: inode, kind: .file)
                    })
        case .image:
            return nil
        }
    }

    /// The `user.imgfs.*` attributes of a variant: `url` (the original's), `thumb_size`, `size`,
    /// `content_type`, `source`, `expires_at` and `error`. Never makes anything.
    func variantAttributes(_ size: Int, _ url: ImageURL) -> [(String, String?)] {
        guard let report = variants?.report(size, of: url) else { return [] }
        let iso = ISO8601DateFormatter()
        return [
            ("url", url.string),
            ("thumb_size", String(size)),
            ("size", report.variant.map { String($0.metadata.size) }),
            ("content_type", report.variant?.metadata.contentType),
            ("source", report.source?.rawValue),
            ("expires_at", report.variant.map { iso.string(from: $0.expiresAt) }),
            ("error", report.error.map { "\($0) (\(url.withoutFragment), \(size) px)" })
        ]
    }

    /// A refreshed original drops its variants; the kernel forgets what it cached of them.
    func variantsOriginalChanged(_ url: ImageURL) {
        guard let variants else { return }
        variants.originalChanged(url)
        for size in variants.configuration.sizes { invalidateVariant(size, url) }
    }

    /// Tells the kernel to drop the cached pages and attributes of a variant's inode, if it has one.
    func invalidateVariant(_ size: Int, _ url: ImageURL) {
        guard let inode = inodes.existingInode(.thumbnail(.image(size: size, url: url.withoutFragment))) else { return }
        invalidate(inode)
    }
}
