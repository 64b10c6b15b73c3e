import Foundation
import ImgfsModel
import ImgfsPipeline
import Logging
import Synchronization

/// The filesystem's operations, free of FUSE: what each kernel request means for imgfs.
///
/// Guarantees: directory listings never wait for the network, and `lookup` waits only when asked to (the adapter asks
/// when the kernel runs lookups of one directory in parallel; where it serializes them, one slow origin would otherwise
/// stall every open); `getattr` and `open` of an image wait for its size (or error), `read` only for the bytes it asks
/// for. The transfer of an image that is neither cached nor arriving is a probe of its first bytes
/// (``ImageRepository/probeBytes``, which an open later continues) when a stat or a listing asks: a getattr, or a
/// lookup in a folder of `lists/` or `hosts/` whose listing is open (``ListingDirectories``); any other lookup (`cat`,
/// a viewer, `stat` by path) starts one whole GET that stops after the probe's bytes unless an open joins it in time
/// (``TransferStart/lookup``). A lookup never asks a probe for the rest: an open does. A URL whose fetch failed
/// does not exist: a lookup that knows the failure (or waits for it) fails with its errno (in a list's or a host's
/// directory always `ENOENT`, so programs listing it go on with the rest), and getattr of a name the kernel still holds
/// fails with it too, so no program sees an empty regular file. The reason stays readable through the `.imgfs`
/// directory (``extendedAttribute(_:name:)``, `imgfs why`). Every asynchronous reply is called exactly once.
public final class ImageFilesystem: Sendable {
    /// Timeouts the kernel is given.
    public struct Configuration: Sendable {
        /// Seconds names stay cached in the kernel.
        public var entryTimeout: Double = 3600
        /// Seconds attributes of images of known size, and of directories, stay cached in the kernel.
        public var attributeTimeout: Double = 3600
        /// The mount's owner: the user the daemon runs as, who (with root) may change the caches and list them.
        public var owner = UInt32(getuid())

        /// The defaults above; the daemon sets each from its options.
        public init() {}
    }

    /// How a file was opened.
    public struct OpenFile: Equatable, Sendable {
        /// The handle to pass to ``read(_:handle:offset:count:reply:)`` and ``release(_:)``.
        public var handle: UInt64
        /// Reads must bypass the page cache (generated files whose size is not stable).
        public var directIO: Bool
        /// The whole image, when it is small and already in memory, for the adapter to put into the kernel's page cache
        /// before answering the open, so the first read needs no READ round trip. Given once per inode and content;
        /// after storing it the adapter asks ``ImageFilesystem/preloadIsCurrent(_:generation:)``.
        public var preload: (bytes: ImageSlice, generation: UInt64)? = nil
        /// The whole image as a file the kernel may read by itself, when it is larger than ``preloadLimit`` and all
        /// of it is in file-backed memory (``BodyMemory``) or it was found in the disk cache (its data file).
        public var kernelReadable: KernelReadableBody? = nil
        /// The image is larger than ``preloadLimit``, its bytes are still arriving, and no other open file of it is
        /// open: the adapter may have this file's reads bypass the page cache, so each byte is copied once, into the
        /// reader, rather than into the page cache and out again (later opens find the whole image in a file).
        public var arrivingAlone = false

        /// Whether both describe the same open: the same handle and flags, a preload or none, the same kernel-readable
        /// file or none (the preload's bytes are not compared).
        public static func == (lhs: OpenFile, rhs: OpenFile) -> Bool {
            lhs.handle == rhs.handle && lhs.directIO == rhs.directIO && (lhs.preload == nil) == (rhs.preload == nil)
                && lhs.kernelReadable?.identity == rhs.kernelReadable?.identity
                && lhs.arrivingAlone == rhs.arrivingAlone
        }
    }

    /// The largest image handed over with its open (``OpenFile/preload``).
    public static let preloadLimit = 1 << 20

    /// Answers `getattr`: the inode's attributes and their timeouts, or why not (the adapter replies with its errno).
    public typealias AttributesReply = @Sendable (Result<Entry, FilesystemError>) -> Void
    /// Answers `lookup`: the named inode's entry, or why not (the adapter replies with its errno).
    public typealias EntryReply = @Sendable (Result<Entry, FilesystemError>) -> Void
    /// Answers `read`: the bytes of the range (fewer at the image's end), or why not (the adapter replies with its
    /// errno).
    public typealias ReadReply = @Sendable (Result<ImageSlice, FilesystemError>) -> Void
    /// Answers `open`: the open file, or why not (the adapter replies with its errno).
    public typealias OpenReply = @Sendable (Result<OpenFile, FilesystemError>) -> Void

    let repository: ImageRepository
    let registry: LongNameRegistry
    /// Thumbnails and downsized variants (`thumb/`); nil: no `thumb/` directory.
    let variants: VariantStore?
    /// `lists/`, when the mount has a list store.
    let lists: ListDirectories?
    let configuration: Configuration
    let logger: Logger
    let inodes = InodeTable()
    let startTime = Date()
    let listings = Locked<(next: UInt64, open: [UInt64: DirectoryListing])>((1, [:]))
    /// The directories with a listing open now (their lookups are probes under `lists/` and `hosts/`).
    let listed = ListingDirectories()
    /// The callers expected to open what they look up (their lookups' transfers wait for the open a little longer).
    let readingCallers = ReadingCallers()
    /// The open files: images and generated files, by handle; the one count of open handles per image.
    let handles = HandleTable()
    private let invalidation = LockedCallback<UInt64, Void>()
    /// What tells the kernel to drop a name (and, for a directory, every name it caches below it).
    let entryInvalidation = LockedCallback<(parent: UInt64, name: String), Void>()
    /// Image inodes whose bytes were handed to the kernel with an open.
    let preloads = PreloadTracker()
    /// What a failed image reads as (`--placeholder`); nil: failures are errors.
    let placeholder: Placeholder?
    /// What SIGHUP reloads and what the last reload did (stats.json's `reload`); nil: not shown.
    let reloadStatus: ReloadStatus?
    /// The entries of lists by the MD5 of their names (`.sh_thumbnails/<size>/<md5>.png`).
    let desktopNames = DesktopNameIndex()
    /// The entries of lists by their names under the format views (`fmt/jpeg/lists/NAME/<entry>.jpg`).
    let formatViewNameIndex = FormatViewNameIndex()
    /// What writes opened list entries' thumbnails into the user's cache (`--tune desktop-thumbnails=on`).
    let desktopFeeder = Locked<DesktopCacheFeeder?>(nil)
    /// The lookups asked (stats.json's `lookups`) and the entries a listing handed to the kernel with a lookup's
    /// answer instead (`listed_with_attributes`, ``readDirectoryPlus(_:from:limit:add:)``).
    let lookupCount = Atomic<Int>(0)
    let listedWithAttributes = Atomic<Int>(0)

    /// A file system over `repository`, naming long URLs through `registry`; the variants, lists, placeholder and
    /// reload status are served when given.
    public init(
        repository: ImageRepository, registry: LongNameRegistry, configuration: Configuration = Configuration(),
        placeholder: Placeholder? = nil, logger: Logger, variants: VariantStore? = nil,
        lists: ListDirectories? = nil, reloadStatus: ReloadStatus? = nil
    ) {
        self.placeholder = placeholder
        self.reloadStatus = reloadStatus
        self.repository = repository
        self.registry = registry
        self.variants = variants
        self.lists = lists
        self.configuration = configuration
        self.logger = logger
        repository.onContentChanged { [weak self] url in self?.contentChanged(url) }
        variants?.onReplaced { [weak self] size, url in self?.invalidateVariant(size, url) }
        lists?.onOpenHandles { [weak self] url in self?.handles.opens(url) ?? 0 }
        repository.onOpenHandles { [weak self] url in self?.handles.opens(url) ?? 0 }
    }

    /// Installs what tells the kernel to drop an inode's cached pages and attributes (called off FUSE threads).
    public func onInvalidate(_ handler: @escaping @Sendable (UInt64) -> Void) {
        invalidation.install(handler)
    }

    /// Installs what tells the kernel to drop the name `name` in directory `parent` with the names below it (called
    /// off FUSE threads, never while a request waits for it).
    public func onInvalidateEntry(_ handler: @escaping @Sendable (UInt64, String) -> Void) {
        entryInvalidation.install { handler($0.parent, $0.name) }
    }

    // MARK: - Names

    /// Resolves `name` in directory `parent` for `caller`; starts the image's transfer, never waits for it.
    public func lookup(parent: UInt64, name: [UInt8], caller: Caller = .root) -> Result<Entry, FilesystemError> {
        let answer = Locked<Result<Entry, FilesystemError>?>(nil)
        lookup(parent: parent, name: name, waitForSize: false, caller: caller) { result in
            answer.withLock { $0 = result }
        }
        return answer.withLock { $0! }
    }

    /// Resolves `name` in directory `parent`. With `waitForSize`, an image whose size is not known yet is answered
    /// once its response has been checked, so the kernel has its size at once instead of asking getattr for it.
    public func lookup(
        parent: UInt64, name: [UInt8], waitForSize: Bool, caller: Caller = .root, interest: Interest? = nil,
        reply: @escaping EntryReply
    ) {
        lookupCount.add(1, ordering: .relaxed)
        guard let directory = inodes.node(parent) else { return reply(.failure(.stale)) }
        let reply = browseReply(in: directory, reply)
        switch resolve(name, in: directory) {
        case .failure(let error):
            reply(.failure(error))
        case .success(.image(let url)):
            let inList: Bool
            if case .list = directory { inList = true } else { inList = false }
            if inList, let known = entryFromFacts(url) { return reply(.success(known)) }
            let glance: (CacheGlance) -> Void = { [lists] in lists?.lookedUp(url, cached: $0.cached) }
            // In a folder of lists/ or hosts/ being listed now, names are looked up by `ls -l`, file managers,
            // scandir + stat: a probe. Otherwise a name is looked up to be read (cat, a viewer) or to be stat'ed (the
            // kernel does not say which): one whole GET that stops after the probe's bytes unless an open comes.
            // A caller not seen before, or one that opened what it looked up last time, is expected to open this.
            let start: TransferStart =
                directory != .images && listed.isListed(parent)
                ? .probe : readingCallers.lookedUp(url.cacheKey, by: caller.thread) ? .lookupToRead : .lookup
            if waitForSize {
                lookupImageWhenKnown(url, interest: interest, start: start, glance: glance, reply: reply)
            } else {
                reply(lookupImage(url, start: start, glance: glance))
            }
            if inList { learn(url) }
        case .success(.generated(let file)):
            reply(
                .success(
                    Entry(
                        attributes: generatedAttributes(file.inode, size: content(of: file).count),
                        entryTimeout: configuration.entryTimeout, attributeTimeout: 0)))
        case .success(.thumbnail(.image(let size, let url))):
            reply(lookupVariant(size, url))
        case .success(.desktop(let node)):
            reply(lookupDesktop(node))
        case .success(.listIndex(let list)):
            reply(.success(listIndexEntry(inodes.lookUp(.listIndex(list)), list: list)))
        case .success(let node):
            reply(.success(directoryEntry(inodes.lookUp(node))))
        }
    }

    /// The kernel dropped `count` references to `inode`.
    public func forget(_ inode: UInt64, count: UInt64) {
        inodes.forget(inode, count: count)
        preloads.forget(inode)
    }

    /// `rm img/<name>`: evicts that URL from both caches (the one change allowed, to the owner and root).
    public func unlink(parent: UInt64, name: [UInt8], caller: Caller) -> Result<Void, FilesystemError> {
        guard let directory = inodes.node(parent) else { return .failure(.stale) }
        guard isTrusted(caller) else { return .failure(.accessDenied) }
        if case .thumbnail(let thumbnails) = directory { return unlinkVariant(name, in: thumbnails) }
        if case .desktop(let desktop) = directory { return unlinkDesktop(name, in: desktop) }
        guard directory == .images else { return .failure(.readOnly) }
        switch resolve(name, in: directory) {
        case .success(.image(let url)):
            repository.evict(url)
            return .success(())
        case .success: return .failure(.readOnly)
        case .failure(let error): return .failure(error)
        }
    }

    // MARK: - Attributes, open, read

    /// The attributes of `inode`; for an image, once its size is known (an expired copy is not revalidated here).
    /// A failure, known or found while getattr waits, is getattr's error: a failed URL is never an empty file.
    public func getattr(_ inode: UInt64, interest: Interest? = nil, reply: @escaping AttributesReply) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        switch node {
        case .image(let url):
            if let known = entryFromFacts(url, inode: inode) { return reply(.success(known)) }
            // With no transfer under way, a stat costs a probe; an open's transfer, if there is one, answers it.
            repository.metadata(url, refresh: false, interest: interest, start: .probe) { [self] result in
                reply(orPlaceholder(inode, result.map { imageEntry(inode, $0) }.mapError { $0.filesystemError }))
                learn(url)
            }
        case .generated(let file):
            reply(
                .success(
                    Entry(
                        attributes: generatedAttributes(inode, size: content(of: file).count), entryTimeout: 0,
                        attributeTimeout: 0)))
        case .thumbnail(.image(let size, let url)):
            variantAttributes(inode, size, url, reply: reply)
        case .desktop(let node):
            desktopAttributes(inode, node, reply: reply)
        case .listIndex(let list):
            reply(.success(listIndexEntry(inode, list: list)))
        default:
            reply(.success(directoryEntry(inode)))
        }
    }

    /// Opens `inode` for reading once its size is known, so a failed fetch fails the open with its error; an expired
    /// cached copy is revalidated first. The statistics are the owner's (and root's) alone.
    public func open(
        _ inode: UInt64, forWriting: Bool, caller: Caller, interest: Interest? = nil, reply: @escaping OpenReply
    ) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        if forWriting { return reply(.failure(.readOnly)) }
        if case .generated = node, !isTrusted(caller) { return reply(.failure(.accessDenied)) }
        if case .listIndex = node, !isTrusted(caller) { return reply(.failure(.accessDenied)) }
        switch node {
        case .image(let url):
            readingCallers.opened(url.cacheKey, by: caller.thread)
            var opened: (hit: Bool, size: Int?)?
            let glance = { [lists] (glance: CacheGlance) in
                opened = lists.map { ($0.opened(url, cached: glance.cached, size: glance.size), glance.size) }
            }
            repository.opening(url, interest: interest, fileAbove: Self.preloadLimit, glance: glance) { [self] result in
                switch result {
                case .success(let (found, body)):
                    learn(url, known: found.metadata)
                    let (handle, opens) = handles.open(.image(OpenImage(url, body: body, repository: repository)))
                    desktopEntryOpened(url)
                    let size = found.metadata.size
                    reply(
                        .success(
                            OpenFile(
                                handle: handle, directIO: false, preload: preload(inode, size: size, body: found.body),
                                kernelReadable: size > Self.preloadLimit
                                    ? found.file ?? KernelReadableBody(found.body, size: size) : nil,
                                arrivingAlone: found.arriving && size > Self.preloadLimit && opens == 1)))
                case .failure(let error):
                    reply(
                        openPlaceholder(url, error: error.filesystemError).map { .success($0) }
                            ?? .failure(error.filesystemError))
                }
            }
            // After the answer to an open of a cached image, beside the transfer of one that is not: on this thread,
            // which costs less than waking another.
            if let opened { lists?.readAhead(after: url, hit: opened.hit, size: opened.size) }
        case .generated(let file):
            reply(
                .success(
                    OpenFile(
                        handle: handles.open(.bytes(ImageBytes(copying: content(of: file)))).handle, directIO: true)))
        case .thumbnail(.image(let size, let url)):
            openVariant(size, url, reply: reply)
        case .desktop(let node):
            openDesktop(node, reply: reply)
        case .listIndex(let list):
            let bytes = ImageBytes(copying: listIndexContent(list))
            reply(.success(OpenFile(handle: handles.open(.bytes(bytes)).handle, directIO: true)))
        default:
            reply(.failure(.isADirectory))
        }
    }

    /// Bytes `offset ..< offset + count` of the file, as soon as they have arrived.
    public func read(
        _ inode: UInt64, handle: UInt64, offset: Int, count: Int, interest: Interest? = nil,
        reply: @escaping ReadReply
    ) {
        guard let node = inodes.node(inode) else { return reply(.failure(.stale)) }
        switch (node, handles[handle]) {
        case (.image, .image(let image)?):
            image.read(offset: offset, count: count, interest: interest) { reply($0.mapError(\.filesystemError)) }
        case (.image, .bytes(let bytes)?), (.generated, .bytes(let bytes)?), (.listIndex, .bytes(let bytes)?):
            reply(.success(ImageSlice(bytes, size: bytes.count, offset: offset, count: count)))
        case (.generated, _), (.listIndex, _):
            reply(.failure(.stale))
        case (.image(let url), _):
            repository.read(url, offset: offset, count: count, interest: interest) { result in
                reply(result.mapError { $0.filesystemError })
            }
        case (.thumbnail(.image(let size, let url)), _):
            readVariant(size, url, offset: offset, count: count, reply: reply)
        case (.desktop(let node), _):
            readDesktop(node, offset: offset, count: count, reply: reply)
        default:
            reply(.failure(.isADirectory))
        }
    }

    /// A request about `inode` was interrupted (its interest withdrawn): the transfer may be called off.
    public func interrupted(_ inode: UInt64) {
        guard case .image(let url)? = inodes.node(inode) else { return }
        repository.readerGaveUp(url, openHandles: handles.opens(url))
    }

    /// A lookup of `name` in `parent` was interrupted while it waited: like ``interrupted(_:)`` for its image.
    public func lookupInterrupted(parent: UInt64, name: [UInt8]) {
        guard let directory = inodes.node(parent), case .success(.image(let url)) = resolve(name, in: directory) else {
            return
        }
        repository.readerGaveUp(url, openHandles: handles.opens(url))
    }

    /// The file `inode` opened with `handle` was closed (or its open never reached the kernel); when it was an
    /// image's last open handle, its transfer may be called off. True when the file was an image or a thumbnail (read
    /// through the page cache or by passthrough), false for a generated file's snapshot (read with direct IO).
    @discardableResult
    public func release(_ inode: UInt64, handle: UInt64) -> Bool {
        switch handles.release(handle) {
        case (.image(let image), let left)?:
            if left == 0 { repository.readerGaveUp(image.url, openHandles: 0) }
            return true
        case (.bytes, _)?:
            return false
        case nil:
            return handle == 0  // thumbnails
        }
    }

    // MARK: - Helpers

    func lookupImage(
        _ url: ImageURL, start: TransferStart, glance: (CacheGlance) -> Void
    ) -> Result<Entry, FilesystemError> {
        switch repository.prepare(url, start: start, continuesProbe: false, glance: glance) {
        case .failure(let error):
            return orPlaceholder(inodes.lookUp(.image(url)), .failure(error.filesystemError))
        case .success(let metadata):
            let inode = inodes.lookUp(.image(url))
            guard let metadata else { return .success(unknownSizeEntry(inode)) }
            return .success(imageEntry(inode, metadata))
        }
    }

    /// A lookup that waits for the size: a failure found while waiting fails the lookup (the name does not exist).
    private func lookupImageWhenKnown(
        _ url: ImageURL, interest: Interest?, start: TransferStart, glance: (CacheGlance) -> Void,
        reply: @escaping EntryReply
    ) {
        // A probe it finds keeps waiting for an open: the lookup may be a stat's (the open asks for the rest).
        let now = repository.prepare(url, interest: interest, start: start, continuesProbe: false, glance: glance) {
            [self] result in
            switch result {
            case .success(let metadata): reply(.success(imageEntry(inodes.lookUp(.image(url)), metadata)))
            case .failure(let error): reply(orPlaceholder(inodes.lookUp(.image(url)), .failure(error.filesystemError)))
            }
        }
        switch now {
        case .failure(let error): reply(orPlaceholder(inodes.lookUp(.image(url)), .failure(error.filesystemError)))
        case .success(let metadata?): reply(.success(imageEntry(inodes.lookUp(.image(url)), metadata)))
        case .success(nil): break  // answered by the closure above
        }
    }

    /// The whole image for ``OpenFile/preload``: the first time `inode` is opened with this content, when it is small
    /// and `body` (from the source that gave its size) is all there.
    private func preload(_ inode: UInt64, size: Int, body: ImageSlice?) -> (bytes: ImageSlice, generation: UInt64)? {
        guard size > 0, size <= Self.preloadLimit, let body, body.count == size, let generation = preloads.claim(inode)
        else { return nil }
        return (body, generation)
    }

    /// After the adapter stored a preload: whether the content is still the one it was taken from (false: a new body
    /// arrived meanwhile, and the kernel must drop what was stored).
    public func preloadIsCurrent(_ inode: UInt64, generation: UInt64) -> Bool {
        preloads.isCurrent(inode, generation: generation)
    }

    func unknownSizeEntry(_ inode: UInt64) -> Entry {
        let unknown = Attributes(
            inode: inode, kind: .file, size: 0, permissions: 0o444, modified: startTime, linkCount: 1)
        return Entry(attributes: unknown, entryTimeout: configuration.entryTimeout, attributeTimeout: 0)
    }

    func imageEntry(_ inode: UInt64, _ metadata: ImageMetadata) -> Entry {
        let attributes = Attributes(
            inode: inode, kind: .file, size: metadata.size, permissions: 0o444,
            modified: metadata.modificationTime, linkCount: 1)
        return Entry(
            attributes: attributes, entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    func directoryEntry(_ inode: UInt64) -> Entry {
        let attributes = Attributes(
            inode: inode, kind: .directory, size: 0,
            permissions: inodes.node(inode).map(Self.permissions(of:)) ?? 0o555, modified: startTime, linkCount: 2)
        return Entry(
            attributes: attributes, entryTimeout: configuration.entryTimeout,
            attributeTimeout: configuration.attributeTimeout)
    }

    func generatedAttributes(_ inode: UInt64, size: Int) -> Attributes {
        Attributes(
            inode: inode, kind: .file, size: size, permissions: Self.permissions(of: .generated(.statistics)),
            modified: Date(), linkCount: 1)
    }

    private func contentChanged(_ url: ImageURL) {
        variantsOriginalChanged(url)
        desktopOriginalChanged(url)
        guard let inode = inodes.existingInode(.image(url)) else { return }
        preloads.contentChanged(inode)
        guard invalidation.isInstalled else { return }
        logger.info("content changed; invalidating the kernel's cached pages", metadata: ["url": "\(url)"])
        invalidation(inode)
    }

    /// Tells the kernel to drop what it cached of `inode` (pages and attributes).
    func invalidate(_ inode: UInt64) {
        invalidation(inode)
    }
}

// MARK: - ImageFilesystem+Names

// MARK: - Resolving names

extension ImageFilesystem {
    /// The node `name` stands for in `directory`, or why it stands for none.
    func resolve(_ name: [UInt8], in directory: Node) -> Result<Node, FilesystemError> {
        do throws(NameError) {
            switch directory {
            case .root:
                if name == Array(ImagePath.imagesDirectory.utf8) { return .success(.images) }
                if name == Array(Self.controlDirectory.utf8) { return .success(.control) }
                if variants != nil, name == Array(Self.thumbnailDirectory.utf8) { return .success(.thumbnail(.root)) }
                if variants?.configuration.formatViews.isEmpty == false, name == Array(Self.formatDirectory.utf8) {
                    return .success(.thumbnail(.formatRoot))
                }
                if lists != nil && name == Array(Self.listsDirectory.utf8) { return .success(.lists) }
                if lists != nil && name == Array(Self.hostsDirectory.utf8) { return .success(.hosts) }
                return .failure(.notFound)
            case .control:
                guard let file = GeneratedFile(rawValue: String(decoding: name, as: UTF8.self)) else {
                    return .failure(.notFound)
                }
                return .success(.generated(file))
            case .images:
                if name == Array(ImagePath.chunkDirectory.utf8) { return .success(.chunkRoot) }
                if ImagePath.isDigestName(name) {
                    return .success(.image(try resolveDigest(String(decoding: name, as: UTF8.self))))
                }
                return .success(.image(try ImageURL(NameCodec.decode(name), keying: repository.rules.current)))
            case .chunkRoot:
                return try resolveChunk(name, after: "")
            case .chunkPrefix(let prefix):
                return try resolveChunk(name, after: prefix)
            case .thumbnail(let node):
                return resolveThumbnail(name, in: node)
            case .lists, .list, .hosts, .host:
                return resolveInLists(name, in: directory)
            case .desktop(let node):
                return resolveDesktop(name, in: node)
            case .image, .generated, .listIndex:
                return .failure(.notADirectory)
            }
        } catch {
            logger.info(
                "rejected name: \(error)", metadata: ["name": "\(String(decoding: name.prefix(300), as: UTF8.self))"])
            return .failure(FilesystemError(error))
        }
    }

    /// `~<sha256>`: from the registry, else from the cache (a cached URL's key is the SHA-256 of its text).
    private func resolveDigest(_ name: String) throws(NameError) -> ImageURL {
        if let url = registry.resolve(name) { return url }
        if let url = repository.tiers.url(forKey: String(name.dropFirst())), ImagePath.digestName(for: url) == name {
            return url
        }
        throw .unknownDigest
    }

    private func resolveChunk(_ name: [UInt8], after prefix: String) throws(NameError) -> Result<Node, FilesystemError>
    {
        let text = prefix + String(decoding: name, as: UTF8.self)
        guard text.utf8.count <= 3 * ImageURL.maximumLength else { throw .tooLong(text.utf8.count / 3) }
        if ImagePath.isContinuation(name) { return .success(.chunkPrefix(String(text.dropLast()))) }
        let url = try ImageURL(NameCodec.decode(Array(text.utf8)), keying: repository.rules.current)
        registry.register(url)
        return .success(.image(url))
    }

    /// The name under `img/` that opens `url`: its plain form, or its digest name.
    func listedName(_ url: ImageURL) -> String {
        switch ImagePath.form(for: url, mountPointLength: 0) {
        case .plain(let plain): plain
        case .chunked, .digest: ImagePath.digestName(for: url)
        }
    }

    static let controlDirectory = ".imgfs"
}

// MARK: - ImageFilesystem+Access

/// Who sent a request: the user id of the calling process, as the kernel gives it with each request.
public struct Caller: Equatable, Sendable {
    /// The calling process's user id.
    public var uid: UInt32
    /// The calling thread's id as the kernel gives it (0: unknown, or the kernel itself).
    public var thread: Int32

    /// The caller with user id `uid` on thread `thread`.
    public init(uid: UInt32, thread: Int32 = 0) {
        self.uid = uid
        self.thread = thread
    }

    /// root, who may always act.
    public static let root = Caller(uid: 0)
}

// MARK: - Who may do what (a mount shared with `allow_other`)

/// The mount's owner (the daemon's user) and root may change the caches, list what is cached or listed and read the
/// statistics. Every other user who can reach the mount (`-o allow_other`) may only look names up and open and read
/// the files they name (and their extended attributes): a listing of `img/` would show every cached URL, signed
/// query strings and all. Refusals are ``FilesystemError/accessDenied`` (EACCES), as POSIX gives for the modes
/// ``permissions(of:)`` reports, which the kernel checks too where the mount has `default_permissions`.
extension ImageFilesystem {
    /// Whether `caller` may change the caches and the lists and see what they hold: the mount's owner, or root.
    public func isTrusted(_ caller: Caller) -> Bool {
        caller.uid == 0 || caller.uid == configuration.owner
    }

    /// Whether listing `node` is the owner's alone: directories whose names come from cached or listed URLs.
    static func listingIsPrivate(_ node: Node) -> Bool {
        switch node {
        case .images, .lists, .list, .hosts, .host, .thumbnail(.size): true
        case .desktop(let desktop): !desktop.isFile
        case .root, .chunkRoot, .chunkPrefix, .control, .generated, .image, .thumbnail(.root), .thumbnail(.formatRoot),
            .thumbnail(.image), .listIndex:
            false
        }
    }

    /// The permission bits `stat` shows for `node`, owned by the daemon's user. They say the same as the checks:
    /// `img/` and `thumb/<px>/` are 0711 (the owner lists them and `rm` evicts in them; others only open names),
    /// `lists/`, a list, `hosts/` and a host 0511, `.imgfs/` 0755 (the owner purges by setting its attribute), its
    /// statistics 0400, images and thumbnails 0444, other directories 0555.
    static func permissions(of node: Node) -> UInt16 {
        switch node {
        case .images, .thumbnail(.size): 0o711
        case .lists, .list, .hosts, .host: 0o511
        case .desktop(let desktop): desktop.isFile ? 0o444 : 0o511
        case .control: 0o755
        case .generated, .listIndex: 0o400
        case .image, .thumbnail(.image): 0o444
        case .root, .chunkRoot, .chunkPrefix, .thumbnail(.root), .thumbnail(.formatRoot): 0o555
        }
    }

    /// ``FilesystemError/accessDenied`` when `caller` may not list `node`.
    func checkListing(_ node: Node, by caller: Caller) -> FilesystemError? {
        Self.listingIsPrivate(node) && !isTrusted(caller) ? .accessDenied : nil
    }
}

// MARK: - Attributes

/// What `stat` shows for one inode.
public struct Attributes: Equatable, Sendable {
    /// A directory or a regular file.
    public enum Kind: Equatable, Sendable { case directory, file }

    /// The inode number.
    public var inode: UInt64
    /// Directory or file.
    public var kind: Kind
    /// The size in bytes (a directory's is 0).
    public var size: Int
    /// Permission bits (``ImageFilesystem/permissions(of:)``): 0444 for images, 0555 or less for directories.
    public var permissions: UInt16
    /// The modification time.
    public var modified: Date
    /// The number of hard links (`st_nlink`).
    public var linkCount: Int

    /// Attributes with the given fields.
    public init(inode: UInt64, kind: Kind, size: Int, permissions: UInt16, modified: Date, linkCount: Int) {
        self.inode = inode
        self.kind = kind
        self.size = size
        self.permissions = permissions
        self.modified = modified
        self.linkCount = linkCount
    }
}

/// The answer to a lookup: the inode's attributes and how long the kernel may keep them.
public struct Entry: Equatable, Sendable {
    /// The inode's attributes.
    public var attributes: Attributes
    /// Seconds the kernel may cache the name → inode binding.
    public var entryTimeout: Double
    /// Seconds the kernel may cache the attributes; 0 while an image's size is not yet known.
    public var attributeTimeout: Double

    /// An entry with the given attributes and timeouts.
    public init(attributes: Attributes, entryTimeout: Double, attributeTimeout: Double) {
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
    }
}

/// One name in a directory listing.
public struct DirectoryEntry: Equatable, Sendable {
    /// The name within the directory.
    public var name: String
    /// The inode number it names.
    public var inode: UInt64
    /// Directory or file.
    public var kind: Attributes.Kind

    /// An entry with the given fields.
    public init(name: String, inode: UInt64, kind: Attributes.Kind) {
        self.name = name
        self.inode = inode
        self.kind = kind
    }
}
