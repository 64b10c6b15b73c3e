import Foundation
import ImgfsModel
import ImgfsPipeline

/// What a node under `thumb/` or `fmt/` stands for.
public enum ThumbnailNode: Hashable, Sendable {
    /// `thumb/`: one directory per allowed size and exact size.
    case root
    /// `fmt/`: one directory per format view.
    case formatRoot
    /// `thumb/<px>/`, `thumb/<W>x<H>/` or `fmt/<format>/`: the variants of that ``VariantKind/directory``.
    case size(VariantKind)
    /// `thumb/<px>/<name>` and the like: the variant `kind` of the image `url` (without fragment).
    case image(kind: VariantKind, url: ImageURL)
}

// MARK: - Thumbnails and downsized variants (thumb/<px>/<name>)

extension ImageFilesystem {
    static let thumbnailDirectory = "thumb"
    static let formatDirectory = "fmt"

    /// The node `name` stands for in a `thumb/` or `fmt/` directory. Sizes, exact sizes and formats that are not
    /// configured are not found; names are read as under `img/` (plain and digest names; chunked names are not
    /// supported here), and their extension (of the fragment, else of the path) says the variant's encoding
    /// (``VariantKind/named(_:in:)``): a name that asks for what its directory cannot give is not found.
    func resolveThumbnail(_ name: [UInt8], in directory: ThumbnailNode) -> Result<Node, FilesystemError> {
        guard let variants else { return .failure(.notFound) }
        let text = String(decoding: name, as: UTF8.self)
        switch directory {
        case .root:
            guard let shape = VariantKind.Shape(text), shape != .whole, variants.allows(VariantKind(shape)) else {
                return .failure(.notFound)
            }
            return .success(.thumbnail(.size(VariantKind(shape))))
        case .formatRoot:
            guard let format = VariantFormat(rawValue: text), variants.allows(VariantKind(.whole, format: format))
            else { return .failure(.notFound) }
            return .success(.thumbnail(.size(VariantKind(.whole, format: format))))
        case .size(let directory):
            guard name != Array(ImagePath.chunkDirectory.utf8) else { return .failure(.notFound) }
            if let node = readableRootNode(name, kind: directory) { return .success(node) }
            return resolve(name, in: .images).flatMap { node in
                guard case .image(let url) = node, let kind = VariantKind.named(url, in: directory) else {
                    return .failure(.notFound)
                }
                return .success(.thumbnail(.image(kind: kind, url: url.withoutFragment)))
            }
        case .image:
            return .failure(.notADirectory)
        }
    }

    /// The entry of a variant. One whose failure is known does not exist: the lookup fails with its error (as an
    /// image's does under `img/`). Otherwise it answers at once (its size is not known until it is made: getattr waits
    /// for it) and starts making it.
    func lookupVariant(_ kind: VariantKind, _ url: ImageURL) -> Result<Entry, FilesystemError> {
        guard let variants else { return .failure(.notFound) }
        if let failure = variants.knownFailure(kind, of: url) { return .failure(failure.filesystemError) }
        let inode = inodes.lookUp(.thumbnail(.image(kind: kind, url: url)))
        variants.variant(kind, of: url, refresh: true) { _ in }
        // A variant that is made anywhere answers with its size: a size 0 would cut short the reads under way.
        if let made = variants.report(kind, of: url).variant { return .success(imageEntry(inode, made.metadata)) }
        return .success(unknownSizeEntry(inode))
    }

    /// getattr of a variant: once it is made; a failure is getattr's error (never an empty file).
    func variantAttributes(_ inode: UInt64, _ kind: VariantKind, _ url: ImageURL, reply: @escaping AttributesReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        if let failure = variants.knownFailure(kind, of: url) { return reply(.failure(failure.filesystemError)) }
        variants.variant(kind, of: url, refresh: false) { [self] result in
            reply(result.map { imageEntry(inode, $0.metadata) }.mapError(\.filesystemError))
        }
    }

    /// open of a variant: once it is made (an expired one revalidated through its original first).
    func openVariant(_ kind: VariantKind, _ url: ImageURL, reply: @escaping OpenReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        variants.variant(kind, of: url, refresh: true) { result in
            reply(result.map { _ in OpenFile(handle: 0, directIO: false) }.mapError(\.filesystemError))
        }
    }

    /// read of a variant.
    func readVariant(_ kind: VariantKind, _ url: ImageURL, offset: Int, count: Int, reply: @escaping ReadReply) {
        guard let variants else { return reply(.failure(.notFound)) }
        variants.read(kind, of: url, offset: offset, count: count) { reply($0.mapError(\.filesystemError)) }
    }

    /// `rm thumb/<px>/<name>` (or under `fmt/<format>/`) evicts that variant.
    func unlinkVariant(_ name: [UInt8], in directory: ThumbnailNode) -> Result<Void, FilesystemError> {
        switch resolveThumbnail(name, in: directory) {
        case .success(.thumbnail(.image(let kind, let url))):
            variants?.evict(kind, of: url)
            return .success(())
        case .success: return .failure(.readOnly)
        case .failure(let error): return .failure(error)
        }
    }

    /// `thumb/` and `fmt/` in the root listing, when there are variants.
    func thumbnailRootEntry() -> [DirectoryEntry] {
        guard let variants else { return [] }
        let inode = inodes.existingInode(.thumbnail(.root)) ?? Self.pseudoInode("")
        var entries = [DirectoryEntry(name: Self.thumbnailDirectory, inode: inode, kind: .directory)]
        if !variants.configuration.formatViews.isEmpty {
            let formats = inodes.existingInode(.thumbnail(.formatRoot)) ?? Self.pseudoInode("f")
            entries.append(DirectoryEntry(name: Self.formatDirectory, inode: formats, kind: .directory))
        }
        return entries
    }

    /// `thumb/` lists the sizes and exact sizes, `fmt/` the formats; a size or format directory the cached variants
    /// listed in it, each by a name that has the extension of its encoding (``variantName(_:_:)``).
    func thumbnailListing(_ node: ThumbnailNode, leading: [DirectoryEntry]) -> DirectoryListing? {
        guard let variants else { return nil }
        let directories: [VariantKind]
        switch node {
        case .root:
            let configuration = variants.configuration
            directories = (configuration.sizes.map { .fit($0) } + configuration.exactSizes).map { VariantKind($0) }
        case .formatRoot:
            directories = variants.configuration.formatViews.map { VariantKind(.whole, format: $0) }
        case .size(let directory):
            return .entries(
                leading
                    + variants.cachedVariants(directory).map { key, url, kind in
                        let inode =
                            inodes.existingInode(.thumbnail(.image(kind: kind, url: url))) ?? Self.pseudoInode(key)
                        return DirectoryEntry(name: variantName(kind, url), inode: inode, kind: .file)
                    })
        case .image:
            return nil
        }
        return .entries(
            leading
                + directories.map { directory in
                    let name = directory.shape == .whole ? directory.format?.rawValue ?? "" : "\(directory.shape)"
                    let inode =
                        inodes.existingInode(.thumbnail(.size(directory)))
                        ?? Self.pseudoInode(SHA256.hex(of: directory.token.utf8))
                    return DirectoryEntry(name: name, inode: inode, kind: .directory)
                })
    }

    /// The name a variant is listed by: its original's name under `img/`, with the extension of the variant's
    /// encoding added as an encoded fragment (`%23.jpg`) when the URL's own extension does not say it. It resolves
    /// to the same variant.
    func variantName(_ kind: VariantKind, _ url: ImageURL) -> String {
        guard let format = kind.format, VariantKind.named(url, in: kind.directory) != kind else {
            return listedName(url)
        }
        return listedName(url.withFragment("." + format.fileExtension))
    }

    /// The `user.imgfs.*` attributes of a variant: `url` (the original's), `thumb_size` (its directory under `thumb/`)
    /// or `format_view`, `size`, `content_type`, `source`, `expires_at` and `error`. Never makes anything.
    func variantAttributes(_ kind: VariantKind, _ url: ImageURL) -> [(String, String?)] {
        guard let report = variants?.report(kind, of: url) else { return [] }
        let iso = ISO8601DateFormatter()
        return [
            ("url", url.string),
            kind.shape == .whole ? ("format_view", kind.format?.rawValue) : ("thumb_size", "\(kind.shape)"),
            ("size", report.variant.map { String($0.metadata.size) }),
            ("content_type", report.variant?.metadata.contentType),
            ("source", report.source?.rawValue),
            ("expires_at", report.variant.map { iso.string(from: $0.expiresAt) }),
            ("error", report.error.map { "\($0) (\(url.withoutFragment), \(kind))" })
        ]
    }

    /// The remembered failures of `url`'s variants, one line each (`thumb/256 (png): reason`), for `imgfs why`.
    func variantFailures(_ url: ImageURL) -> String? {
        guard let failures = variants?.knownFailures(of: url.withoutFragment), !failures.isEmpty else { return nil }
        return failures.map { "\($0.kind): \($0.error)" }.joined(separator: "\n")
    }

    /// A refreshed original drops its variants; the kernel forgets what it cached of them.
    func variantsOriginalChanged(_ url: ImageURL) {
        guard let variants else { return }
        variants.originalChanged(url)
        for kind in variants.allKinds { invalidateVariant(kind, url) }
    }

    /// Tells the kernel to drop the cached pages and attributes of a variant's inode, if it has one.
    func invalidateVariant(_ kind: VariantKind, _ url: ImageURL) {
        guard let inode = inodes.existingInode(.thumbnail(.image(kind: kind, url: url.withoutFragment))) else { return }
        invalidate(inode)
    }
}
