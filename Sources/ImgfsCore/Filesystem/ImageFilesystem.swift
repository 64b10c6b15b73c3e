import Foundation
import Logging
import Synchronization

/// The filesystem's operations, free of FUSE: what each kernel request means for imgfs.
///
/// Guarantees: `lookup` and directory listings never wait for the network (the kernel serializes lookups per
/// directory, so one slow origin would otherwise stall every open); `getattr` and `open` of an image wait for its
/// size (or error), `read` only for the bytes it asks for. Every asynchronous reply is called exactly once.
public final class ImageFilesystem: @unchecked Sendable {
    /// Timeouts the kernel is given.
    public struct Configuration: Sendable {
        /// Seconds names stay cached in the kernel.
        public var entryTimeout: Double = 3600
        /// Seconds attributes of images of known size, and of directories, stay cached in the kernel.
        public var attributeTimeout: Double = 3600

        public init() {}
    }

    public typealias AttributesReply = @Sendable (Result<Attributes, FilesystemError>) -> Void
    public typealias ReadReply = @Sendable (Result<ImageSlice, FilesystemError>) -> Void
    public typealias OpenReply = @Sendable (Result<Void, FilesystemError>) -> Void

    private let coordinator: FetchCoordinator
    private let registry: LongNameRegistry
    private let configuration: Configuration
    private let logger: Logger
    private let inodes = InodeTable()
    private let startTime = Date()
    private let listings = Mutex<(next: UInt64, open: [UInt64: [DirectoryEntry]])>((1, [:]))

    public init(coordinator: FetchCoordinator, registry: LongNameRegistry, configuration: Configuration = Configuration(),
                logger: Logger) {
        self.coordinator = coordinator
        self.registry = registry
        self.configuration = configuration
        self.logger = logger
    }

    // MARK: - Names

    /// Resolves `name` in directory `parent`; starts the image's transfer, never waits for it.
    public func lookup(parent: UInt64, name: [UInt8]) -> Result<Entry, FilesystemError> {
        guard let directory = inodes.node(parent) else { return .failure(.stale) }
        let resolution = resolve(name, in: directory)
        switch resolution {
        case .failure(let error):
            return .failure(error)
        case .success(.image(let url)):
            return lookupImage(url)
        case .success(let node):
            return .success(directoryEntry(inodes.lookUp(node)))
        }
    }

    /// The kernel dropped `count` references to `inode`.
    public func forget(_ inode: UInt64, count: UInt64) {
        inodes.forget(inode, count: count)
    }

    // MARK: - Attributes, open, read

    /// The attributes of `inode`; for an image, once its size is known.
    public func getattr(_ inode: UInt64, reply: @escaping AttributesReply) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        guard case .image(let url) = node else { return reply(.success(directoryAttributes(inode))) }
        coordinator.download(for: url).whenMetadataKnown { [self] result in
            reply(result.map { fileAttributes(inode, $0) }.mapError { report($0, url) })
        }
    }

    /// Opens `inode` for reading once its size is known, so a failed fetch fails the open with its error.
    public func open(_ inode: UInt64, forWriting: Bool, reply: @escaping OpenReply) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        guard case .image(let url) = node else { return reply(.failure(.isADirectory)) }
        if forWriting { return reply(.failure(.readOnly)) }
        coordinator.download(for: url).whenMetadataKnown { [self] result in
            reply(result.map { _ in () }.mapError { report($0, url) })
        }
    }

    /// Bytes `offset ..< offset + count` of image `inode`, as soon as they have arrived.
    public func read(_ inode: UInt64, offset: Int, count: Int, reply: @escaping ReadReply) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        guard case .image(let url) = node else { return reply(.failure(.isADirectory)) }
        coordinator.download(for: url).read(offset: offset, count: count) { [self] result in
            reply(result.mapError { report($0, url) })
        }
    }

    // MARK: - Directories

    /// Takes a snapshot of directory `inode` for paging through with ``readDirectory(_:from:)``; returns its handle.
    public func openDirectory(_ inode: UInt64) -> Result<UInt64, FilesystemError> {
        guard let node = inodes.node(inode) else { return .failure(.stale) }
        let parentEntries = [DirectoryEntry(name: ".", inode: inode, kind: .directory),
                             DirectoryEntry(name: "..", inode: InodeTable.rootInode, kind: .directory)]
        let children: [DirectoryEntry]
        switch node {
        case .root:
            children = [DirectoryEntry(name: ImagePath.imagesDirectory, inode: InodeTable.imagesInode, kind: .directory)]
        case .images:
            children = coordinator.completedURLs().map(listingEntry).sorted { $0.name < $1.name }
        case .chunkRoot, .chunkPrefix:
            children = []
        case .image:
            return .failure(.notADirectory)
        }
        return .success(listings.withLock { listings in
            let handle = listings.next
            listings.next += 1
            listings.open[handle] = parentEntries + children
            return handle
        })
    }

    /// The entries of an open listing from position `offset` on.
    public func readDirectory(_ handle: UInt64, from offset: Int) -> ArraySlice<DirectoryEntry> {
        listings.withLock { listings in
            guard let entries = listings.open[handle], offset < entries.count else { return [] }
            return entries[max(offset, 0)...]
        }
    }

    /// Drops an open listing.
    public func closeDirectory(_ handle: UInt64) {
        _ = listings.withLock { $0.open.removeValue(forKey: handle) }
    }

    // MARK: - Helpers

    private func resolve(_ name: [UInt8], in directory: Node) -> Result<Node, FilesystemError> {
        do throws(NameError) {
            switch directory {
            case .root:
                return name == Array(ImagePath.imagesDirectory.utf8) ? .success(.images) : .failure(.notFound)
            case .images:
                if name == Array(ImagePath.chunkDirectory.utf8) { return .success(.chunkRoot) }
                if ImagePath.isDigestName(name) {
                    guard let url = registry.resolve(String(decoding: name, as: UTF8.self)) else { throw .unknownDigest }
                    return .success(.image(url))
                }
                return .success(.image(try ImageURL(NameCodec.decode(name))))
            case .chunkRoot:
                return try resolveChunk(name, after: "")
            case .chunkPrefix(let prefix):
                return try resolveChunk(name, after: prefix)
            case .image:
                return .failure(.notADirectory)
            }
        } catch {
            logger.info("rejected name: \(error)", metadata: ["name": "\(String(decoding: name.prefix(300), as: UTF8.self))"])
            return .failure(FilesystemError(error))
        }
    }

    private func resolveChunk(_ name: [UInt8], after prefix: String) throws(NameError) -> Result<Node, FilesystemError> {
        let text = prefix + String(decoding: name, as: UTF8.self)
        guard text.utf8.count <= 3 * ImageURL.maximumLength else { throw .tooLong(text.utf8.count / 3) }
        if ImagePath.isContinuation(name) { return .success(.chunkPrefix(String(text.dropLast()))) }
        let url = try ImageURL(NameCodec.decode(Array(text.utf8)))
        registry.register(url)
        return .success(.image(url))
    }

    private func lookupImage(_ url: ImageURL) -> Result<Entry, FilesystemError> {
        if let earlier = coordinator.existingDownload(for: url), case .failed(let error, _) = earlier.phase {
            return .failure(error.filesystemError)
        }
        let metadata = coordinator.download(for: url).currentMetadata
        let inode = inodes.lookUp(.image(url))
        guard let metadata else {
            let unknown = Attributes(inode: inode, kind: .file, size: 0, permissions: 0o444, modified: startTime, linkCount: 1)
            return .success(Entry(attributes: unknown, entryTimeout: configuration.entryTimeout, attributeTimeout: 0))
        }
        return .success(Entry(attributes: fileAttributes(inode, metadata), entryTimeout: configuration.entryTimeout,
                              attributeTimeout: configuration.attributeTimeout))
    }

    private func directoryEntry(_ inode: UInt64) -> Entry {
        Entry(attributes: directoryAttributes(inode), entryTimeout: configuration.entryTimeout,
              attributeTimeout: configuration.attributeTimeout)
    }

    private func directoryAttributes(_ inode: UInt64) -> Attributes {
        Attributes(inode: inode, kind: .directory, size: 0, permissions: 0o555, modified: startTime, linkCount: 2)
    }

    private func fileAttributes(_ inode: UInt64, _ metadata: ImageMetadata) -> Attributes {
        Attributes(inode: inode, kind: .file, size: metadata.size, permissions: 0o444,
                   modified: metadata.lastModified ?? metadata.fetchedAt, linkCount: 1)
    }

    private func listingEntry(_ url: ImageURL) -> DirectoryEntry {
        let name: String
        switch ImagePath.form(for: url, mountPointLength: 0) {
        case .plain(let plain): name = plain
        case .chunked, .digest: name = registry.register(url)
        }
        return DirectoryEntry(name: name, inode: inodes.existingInode(.image(url)) ?? Self.pseudoInode(url), kind: .file)
    }

    /// A stable inode number for listings of images the kernel has not looked up (readdir's d_ino is informational).
    private static func pseudoInode(_ url: ImageURL) -> UInt64 {
        UInt64(truncatingIfNeeded: url.string.utf8.reduce(UInt64(14695981039346656037)) { ($0 ^ UInt64($1)) &* 1099511628211 }) | 1 << 63
    }

    private func report(_ error: FetchError, _ url: ImageURL) -> FilesystemError {
        error.filesystemError
    }
}
