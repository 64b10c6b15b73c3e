import Foundation
import ImgfsModel
import ImgfsPipeline

// MARK: - Desktop views: shared thumbnail repositories and thumbnails by readable names

extension ImageFilesystem {
    /// `.sh_thumbnails` in `folder` (a list's or a host's directory), when the mount makes variants. Not listed in the
    /// folder (names starting with a dot are never entries): readers of shared repositories look it up by name.
    func repositoryNode(_ name: [UInt8], in folder: DesktopNode.Folder) -> Node? {
        guard variants != nil, name == Array(DesktopNode.repositoryDirectory.utf8) else { return nil }
        return .desktop(.repository(folder))
    }

    /// `lists` and `hosts` in `thumb/<px>/` and `fmt/<format>/`: the variants of that directory by readable names
    /// (found by name, not listed: `thumb/<px>/` lists the cached variants of its size).
    func readableRootNode(_ name: [UInt8], kind: VariantKind) -> Node? {
        guard lists != nil else { return nil }
        if name == Array(Self.listsDirectory.utf8) { return .desktop(.readableRoot(kind, hosts: false)) }
        if name == Array(Self.hostsDirectory.utf8) { return .desktop(.readableRoot(kind, hosts: true)) }
        return nil
    }

    /// The node `name` stands for in a directory of the desktop views; never touches the network.
    func resolveDesktop(_ name: [UInt8], in directory: DesktopNode) -> Result<Node, FilesystemError> {
        guard let lists else { return .failure(.notFound) }
        let text = String(decoding: name, as: UTF8.self)
        switch directory {
        case .repository(let folder):
            guard let size = DesktopThumbnailSize(folder: text) else { return .failure(.notFound) }
            return .success(.desktop(.repositorySize(folder, size)))
        case .repositorySize(let folder, let size):
            guard text.hasSuffix(".png"), let entry = digestNames(folder)[text], let url = folderURL(folder, entry)
            else { return .failure(.notFound) }
            return .success(.desktop(.thumbnail(folder, size, name: entry, url: url.withoutFragment)))
        case .readableRoot(let kind, let hosts):
            if hosts {
                let known = lists.hosts.hosts()[text] != nil || lists.hosts.hosts(rebuild: true)[text] != nil
                return known ? .success(.desktop(.readableFolder(kind, .host(text)))) : .failure(.notFound)
            }
            return lists.store.list(text, recheck: true) == nil
                ? .failure(.notFound) : .success(.desktop(.readableFolder(kind, .list(text))))
        case .readableFolder(let directory, let folder):
            if directory.shape == .whole, let format = directory.format {
                guard let entry = formatViewNames(folder, format, recheck: false).entryByViewName[text],
                    let url = folderURL(folder, entry)
                else { return .failure(.notFound) }
                return .success(.thumbnail(.image(kind: directory, url: url.withoutFragment)))
            }
            guard let url = folderURL(folder, text), let kind = VariantKind.named(fileName: text, in: directory) else {
                return .failure(.notFound)
            }
            return .success(.thumbnail(.image(kind: kind, url: url.withoutFragment)))
        case .thumbnail:
            return .failure(.notADirectory)
        }
    }

    /// The image of the entry `name` of `folder`, named under the mount's rules now.
    private func folderURL(_ folder: DesktopNode.Folder, _ name: String) -> ImageURL? {
        guard let lists else { return nil }
        switch folder {
        case .list(let list):
            guard let images = lists.store.list(list), let index = images.index(of: name) else { return nil }
            return images.entries[index].url(keying: repository.rules.current)
        case .host(let host):
            return lists.hosts.hosts()[host]?[name] ?? lists.hosts.hosts(rebuild: true)[host]?[name]
        }
    }

    /// The entry names of `folder`, in its order (a list's) or sorted (a host's).
    private func folderNames(_ folder: DesktopNode.Folder) -> [String] {
        guard let lists else { return [] }
        switch folder {
        case .list(let list): return lists.store.list(list, recheck: true)?.entries.map(\.name) ?? []
        case .host(let host): return (lists.hosts.hosts(rebuild: true)[host] ?? [:]).keys.sorted()
        }
    }

    /// The names of `folder`'s entries under the format view of `format` (``FormatViewNameIndex``); `recheck`: a
    /// list's file is checked for changes first (as a listing does).
    private func formatViewNames(
        _ folder: DesktopNode.Folder, _ format: VariantFormat, recheck: Bool
    ) -> FormatViewNameIndex.Names {
        guard let lists else { return FormatViewNameIndex.names(of: [], format: format) }
        switch folder {
        case .list(let list):
            guard let images = lists.store.list(list, recheck: recheck) else {
                return FormatViewNameIndex.names(of: [], format: format)
            }
            return formatViewNameIndex.names(ofList: list, images.entries, format: format)
        case .host:
            return FormatViewNameIndex.names(of: folderNames(folder), format: format)
        }
    }

    /// The entry names of `folder` by their thumbnails' file names in a shared repository.
    private func digestNames(_ folder: DesktopNode.Folder) -> [String: String] {
        guard let lists else { return [:] }
        switch folder {
        case .list(let list):
            guard let images = lists.store.list(list) else { return [:] }
            return desktopNames.names(ofList: list, images.entries)
        case .host:
            return DesktopNameIndex.names(of: folderNames(folder))
        }
    }

    // MARK: - The thumbnails of a shared repository

    /// The standard's keys of the thumbnail of the entry `name`, made from an original of `facts`: `Thumb::URI` is the
    /// entry's file name as a relative URI (a shared repository's thumbnails name the file beside it).
    private func repositoryText(name: String, _ facts: VariantStore.DesktopFacts) -> [(key: String, value: String)] {
        ThumbnailPNG.keys(uri: FileURI.escape(Array(name.utf8)), modified: facts.modified, size: facts.size)
    }

    private func repositoryEntry(_ inode: UInt64, name: String, _ variant: VariantStore.Variant) -> Entry {
        let facts = VariantStore.desktopFacts(of: variant) ?? .init(modified: 0, size: 0)
        let size = ThumbnailPNG.size(ofPNG: variant.metadata.size, text: repositoryText(name: name, facts))
        let attributes = Attributes(
            inode: inode, kind: .file, size: size, permissions: 0o444,
            modified: Date(timeIntervalSince1970: TimeInterval(facts.modified)), linkCount: 1)
        // Attributes for a second, as names: a thumbnail made again (its original changed) is seen at once.
        return Entry(
            attributes: attributes, entryTimeout: Self.browseEntryTimeout, attributeTimeout: Self.browseEntryTimeout)
    }

    /// The entry of a repository's thumbnail at once (its size once it is made: getattr and open wait for it and
    /// start making it, so a lookup alone, as `rm` makes, never does). One whose failure is known does not exist.
    func lookupDesktop(_ node: DesktopNode) -> Result<Entry, FilesystemError> {
        guard let variants, case .thumbnail(_, let size, let name, let url) = node else {
            return .success(directoryEntry(inodes.lookUp(.desktop(node))))
        }
        if variants.knownDesktopFailure(size, of: url) != nil { return .failure(.notFound) }
        let inode = inodes.lookUp(.desktop(node))
        if let made = variants.cachedDesktopThumbnail(size, of: url) {
            return .success(repositoryEntry(inode, name: name, made))
        }
        return .success(unknownSizeEntry(inode))
    }

    /// getattr of a node of the desktop views: a thumbnail once it is made (a failed one does not exist).
    func desktopAttributes(_ inode: UInt64, _ node: DesktopNode, reply: @escaping AttributesReply) {
        guard case .thumbnail(_, let size, let name, let url) = node else {
            return reply(.success(directoryEntry(inode)))
        }
        guard let variants else { return reply(.failure(.notFound)) }
        variants.desktopThumbnail(size, of: url, refresh: false) { [self] result in
            reply(result.map { repositoryEntry(inode, name: name, $0) }.mapError { $0.filesystemError.asListedEntry })
        }
    }

    /// open of a repository's thumbnail: once it is made.
    func openDesktop(_ node: DesktopNode, reply: @escaping OpenReply) {
        guard case .thumbnail(_, let size, _, let url) = node else { return reply(.failure(.isADirectory)) }
        guard let variants else { return reply(.failure(.notFound)) }
        variants.desktopThumbnail(size, of: url, refresh: true) { result in
            reply(
                result.map { _ in OpenFile(handle: 0, directIO: false) }.mapError { $0.filesystemError.asListedEntry })
        }
    }

    /// read of a repository's thumbnail: its PNG with the standard's text chunks.
    func readDesktop(_ node: DesktopNode, offset: Int, count: Int, reply: @escaping ReadReply) {
        guard case .thumbnail(_, let size, let name, let url) = node else { return reply(.failure(.isADirectory)) }
        guard let variants else { return reply(.failure(.notFound)) }
        variants.desktopThumbnail(size, of: url, refresh: false) { [self] result in
            switch result {
            case .failure(let error):
                reply(.failure(error.filesystemError.asListedEntry))
            case .success(let variant):
                guard let png = variants.desktopPNG(variant, of: url) else {
                    return readDesktop(node, offset: offset, count: count, reply: reply)
                }
                let facts = VariantStore.desktopFacts(of: variant) ?? .init(modified: 0, size: 0)
                let file = ThumbnailPNG.bytes(ofPNG: png, text: repositoryText(name: name, facts))
                reply(.success(ImageSlice(ImageBytes(copying: file), size: file.count, offset: offset, count: count)))
            }
        }
    }

    /// `rm .sh_thumbnails/<size>/<md5>.png` evicts that thumbnail (and `rm thumb/<px>/lists/NAME/<entry>` the
    /// variant); the original stays.
    func unlinkDesktop(_ name: [UInt8], in directory: DesktopNode) -> Result<Void, FilesystemError> {
        switch resolveDesktop(name, in: directory) {
        case .success(.desktop(.thumbnail(_, let size, _, let url))):
            variants?.evictDesktop(size, of: url)
            return .success(())
        case .success(.thumbnail(.image(let kind, let url))):
            variants?.evict(kind, of: url)
            return .success(())
        case .success: return .failure(.readOnly)
        case .failure(let error): return .failure(error)
        }
    }

    // MARK: - Listings (names only, never the network)

    /// The listing of a directory of the desktop views; nil for a file.
    func desktopListing(_ node: DesktopNode, leading: [DirectoryEntry]) -> DirectoryListing? {
        func directory(_ name: String, _ child: DesktopNode) -> DirectoryEntry {
            DirectoryEntry(
                name: name, inode: inodes.existingInode(.desktop(child)) ?? Self.nameInode(name), kind: .directory)
        }
        guard let lists else { return .entries(leading) }
        switch node {
        case .repository(let folder):
            return .entries(
                leading + DesktopThumbnailSize.allCases.map { directory($0.folder, .repositorySize(folder, $0)) })
        case .repositorySize(let folder, _):
            let names = digestNames(folder).keys.sorted()
            return .entries(
                leading + names.map { DirectoryEntry(name: $0, inode: Self.nameInode($0), kind: .file) })
        case .readableRoot(let kind, let hosts):
            let names = hosts ? lists.hosts.hosts(rebuild: true).keys.sorted() : lists.store.names()
            return .entries(
                leading
                    + names.map { name in
                        directory(name, .readableFolder(kind, hosts ? .host(name) : .list(name)))
                    })
        case .readableFolder(let directory, let folder):
            let names =
                directory.shape == .whole
                ? directory.format.map { formatViewNames(folder, $0, recheck: true).viewNames } ?? []
                : folderNames(folder)
            return .entries(
                leading + names.map { DirectoryEntry(name: $0, inode: Self.nameInode($0), kind: .file) })
        case .thumbnail:
            return nil
        }
    }

    /// The desktop thumbnails of `url` are dropped with its variants when its original changes.
    func desktopOriginalChanged(_ url: ImageURL) {
        variants?.desktopOriginalChanged(url)
    }
}

// MARK: - The user's cache, fed as list entries are opened

extension ImageFilesystem {
    /// From now on the thumbnails of list entries opened are written into the user's cache by `feeder`.
    public func feedDesktopCache(_ feeder: DesktopCacheFeeder) {
        desktopFeeder.withLock { $0 = feeder }
    }
}
