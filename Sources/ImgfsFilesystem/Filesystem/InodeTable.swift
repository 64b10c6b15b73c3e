import ImgfsModel
import ImgfsPipeline

/// What an inode stands for.
public enum Node: Hashable, Sendable {
    /// The mount root.
    case root
    /// `img/`.
    case images
    /// `img/+/`, where chunked names start.
    case chunkRoot
    /// A directory inside a chunked name: the encoded URL text so far.
    case chunkPrefix(String)
    /// `.imgfs/`, imgfs's own files.
    case control
    /// A file under `.imgfs/` whose content is generated when it is opened.
    case generated(GeneratedFile)
    /// An image file.
    case image(ImageURL)
    /// `thumb/`, a size directory below it, or a variant in one.
    case thumbnail(ThumbnailNode)
    /// `lists/`, one directory per URL list.
    case lists
    /// The directory of one URL list.
    case list(String)
    /// `hosts/`, one directory per host of the cached images.
    case hosts
    /// The cached images of one host.
    case host(String)
    /// A shared thumbnail repository (`.sh_thumbnails/`) or a folder of thumbnails by readable names, or a file in it.
    case desktop(DesktopNode)
    /// A list's `.index.jsonl` (``ListIndex``), generated when it is opened.
    case listIndex(String)
}

/// Numbers inodes and counts the kernel's references to them (FUSE lookup counts).
///
/// Guarantees: one inode number per node while the kernel holds a reference; numbers are never reused within a mount;
/// the fixed directories always resolve.
public final class InodeTable: Sendable {
    /// The mount's root directory.
    public static let rootInode: UInt64 = 1
    /// `img/`, the images by URL.
    public static let imagesInode: UInt64 = 2
    /// `img/+/`, where chunked names (of URLs too long for one name) start.
    public static let chunkRootInode: UInt64 = 3
    /// `.imgfs/`, the control directory.
    public static let controlInode: UInt64 = 4
    /// `lists/`, one directory per URL list.
    public static let listsInode: UInt64 = 8
    /// `hosts/`, one directory per host of the cached images.
    public static let hostsInode: UInt64 = 9

    private struct Slot {
        var node: Node
        var lookups: UInt64
    }

    private struct State {
        var slots: [UInt64: Slot] = [:]
        var numbers: [Node: UInt64] = [:]
        var next: UInt64 = 16
    }

    private let state = Locked(State())

    /// A table that holds only the fixed directories.
    public init() {}

    /// What `inode` stands for, or nil when it is not (or no longer) known.
    public func node(_ inode: UInt64) -> Node? {
        switch inode {
        case Self.rootInode: .root
        case Self.imagesInode: .images
        case Self.chunkRootInode: .chunkRoot
        case Self.controlInode: .control
        case Self.listsInode: .lists
        case Self.hostsInode: .hosts
        case let number where GeneratedFile.allCases.contains { $0.inode == number }:
            .generated(GeneratedFile.allCases.first { $0.inode == number }!)
        default: state.withLock { $0.slots[inode]?.node }
        }
    }

    /// The inode of `node`, counting one more kernel reference.
    public func lookUp(_ node: Node) -> UInt64 {
        switch node {
        case .root: return Self.rootInode
        case .images: return Self.imagesInode
        case .chunkRoot: return Self.chunkRootInode
        case .control: return Self.controlInode
        case .lists: return Self.listsInode
        case .hosts: return Self.hostsInode
        case .generated(let file): return file.inode
        case .chunkPrefix, .image, .thumbnail, .list, .host, .desktop, .listIndex:
            return state.withLock { state in
                if let inode = state.numbers[node] {
                    state.slots[inode]?.lookups += 1
                    return inode
                }
                let inode = state.next
                state.next += 1
                state.slots[inode] = Slot(node: node, lookups: 1)
                state.numbers[node] = inode
                return inode
            }
        }
    }

    /// The inode of `node` if the kernel holds one, without counting a reference.
    public func existingInode(_ node: Node) -> UInt64? {
        switch node {
        case .root: Self.rootInode
        case .images: Self.imagesInode
        case .chunkRoot: Self.chunkRootInode
        case .control: Self.controlInode
        case .lists: Self.listsInode
        case .hosts: Self.hostsInode
        case .generated(let file): file.inode
        case .chunkPrefix, .image, .thumbnail, .list, .host, .desktop, .listIndex: state.withLock { $0.numbers[node] }
        }
    }

    /// Drops `count` kernel references; the inode is forgotten when none are left.
    public func forget(_ inode: UInt64, count: UInt64) {
        state.withLock { state in
            guard var slot = state.slots[inode] else { return }
            slot.lookups = slot.lookups > count ? slot.lookups - count : 0
            if slot.lookups == 0 {
                state.slots[inode] = nil
                state.numbers[slot.node] = nil
            } else {
                state.slots[inode] = slot
            }
        }
    }

    /// How many inodes besides the fixed ones are known.
    public var count: Int { state.withLock { $0.slots.count } }
}

/// The files under `.imgfs/`, generated when opened.
public enum GeneratedFile: String, CaseIterable, Sendable {
    /// Counters and sizes as JSON.
    case statistics = "stats.json"
    /// The same in the Prometheus text format.
    case metrics

    /// Its fixed inode number.
    public var inode: UInt64 {
        switch self {
        case .statistics: 5
        case .metrics: 6
        }
    }
}

// MARK: - ReadingCallers

/// Which callers are expected to open what they look up: a caller (the kernel's thread id of the request) not seen
/// yet, or one whose last image lookup was followed by its open of that image (`cp`, a data loader's `open`, a viewer
/// stepping through a folder); not one that looked up without opening (`ls -l`, a file manager's stats) until it
/// opens what it looked up again.
///
/// Guarantees: thread safe; at most ``limit`` callers are remembered (all are forgotten when more come); caller 0 (a
/// request the kernel makes for itself) is never expected to open.
final class ReadingCallers: Sendable {
    /// How many callers are remembered.
    static let limit = 4096

    private struct Habit {
        var lastLookedUp: String
        var opened = false
    }

    private let habits = Locked<[Int32: Habit]>([:])

    /// `caller` looks up the image with cache key `key`; returns whether it is expected to open it: it is new, or it
    /// opened the image of its previous lookup.
    func lookedUp(_ key: String, by caller: Int32) -> Bool {
        guard caller != 0 else { return false }
        return habits.withLock { habits in
            let expected = habits[caller]?.opened ?? true
            if habits[caller] == nil && habits.count >= Self.limit { habits.removeAll(keepingCapacity: true) }
            habits[caller] = Habit(lastLookedUp: key)
            return expected
        }
    }

    /// `caller` opens the image with cache key `key`.
    func opened(_ key: String, by caller: Int32) {
        guard caller != 0 else { return }
        habits.withLock { habits in
            if habits[caller]?.lastLookedUp == key { habits[caller]?.opened = true }
        }
    }
}

// MARK: - PreloadTracker

/// Which image inodes the kernel was handed the bytes of with an open (``ImageFilesystem/OpenFile/preload``), and a
/// generation per inode that a change of content bumps.
///
/// Guarantees: each content of an inode is claimed for a preload at most once; a preload whose generation is no longer
/// current when it has been stored is reported as stale, so that the bytes it put into the kernel are dropped again (a
/// change of content that raced with the store).
final class PreloadTracker: Sendable {
    private struct State {
        var claimed: Set<UInt64> = []
        var generations: [UInt64: UInt64] = [:]
    }

    private let state = Locked(State())

    /// Claims the preload of `inode`'s current content: its generation, or nil when it was claimed already.
    func claim(_ inode: UInt64) -> UInt64? {
        state.withLock { state in
            guard state.claimed.insert(inode).inserted else { return nil }
            return state.generations[inode, default: 0]
        }
    }

    /// The content of `inode` changed: the next open hands its bytes over again.
    func contentChanged(_ inode: UInt64) {
        state.withLock { state in
            state.claimed.remove(inode)
            state.generations[inode, default: 0] &+= 1
        }
    }

    /// Whether `generation` is still the current content of `inode`.
    func isCurrent(_ inode: UInt64, generation: UInt64) -> Bool {
        state.withLock { $0.generations[inode, default: 0] == generation }
    }

    /// The kernel forgot `inode`.
    func forget(_ inode: UInt64) {
        state.withLock { state in
            state.claimed.remove(inode)
            state.generations[inode] = nil
        }
    }
}

// MARK: - HandleTable

/// The files the kernel has open, by the 64-bit handle their OPEN answered with: images (``OpenImage``) and snapshots
/// of generated files (statistics, a placeholder). It is the one count of open files per image that the parts below
/// the filesystem ask (``OpenHandleCounter``: a transfer someone has open is never called off).
///
/// Guarantees: thread safe; handles are never 0 and never reused while the mount lives; an image's count is the number
/// of its handles not yet released, counted by URL without fragment (one transfer serves them all).
final class HandleTable: Sendable {
    /// What one handle reads.
    enum File: Sendable {
        case image(OpenImage)
        case bytes(ImageBytes)
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: File] = [:]
        var openImages: [String: Int] = [:]
    }

    private let state = Locked(State())

    /// Registers an open file: its handle, and how many handles its image has open now (with this one).
    func open(_ file: File) -> (handle: UInt64, opens: Int) {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.files[handle] = file
            guard case .image(let image) = file else { return (handle, 0) }
            state.openImages[image.url.cacheKey, default: 0] += 1
            return (handle, state.openImages[image.url.cacheKey]!)
        }
    }

    /// The file open with `handle`, if it is.
    subscript(handle: UInt64) -> File? {
        state.withLock { $0.files[handle] }
    }

    /// Releases `handle`: its file, and for an image how many handles it still has open.
    func release(_ handle: UInt64) -> (file: File, opensLeft: Int)? {
        state.withLock { state in
            guard let file = state.files.removeValue(forKey: handle) else { return nil }
            guard case .image(let image) = file else { return (file, 0) }
            let key = image.url.cacheKey
            let left = max(0, (state.openImages[key] ?? 0) - 1)
            state.openImages[key] = left == 0 ? nil : left
            return (file, left)
        }
    }

    /// How many handles are open on `url`'s image.
    func opens(_ url: ImageURL) -> Int {
        state.withLock { $0.openImages[url.cacheKey] ?? 0 }
    }
}

// MARK: - OpenImage

/// An image file the kernel has open: made by its OPEN, it holds what that open found (``OpenedBody``: the transfer it
/// started or joined, the whole body, or a disk-cache entry), and its READs are served from that, without asking the
/// repository where the URL is served from again.
///
/// Guarantees: while the held body can serve, a read takes no repository lock and counts as no new caller of the
/// transfer; a read waits only for its own range of a transfer under way. When the held body can no longer serve (its
/// transfer failed or was called off, its disk entry is unusable) the URL is resolved again, as a read without a handle
/// would (a remembered failure, an expired copy served, or a new transfer), and later reads resolve it too. A purge
/// or eviction never disturbs it: it holds its own reference to the bytes.
final class OpenImage: Sendable {
    let url: ImageURL
    private let repository: ImageRepository
    /// nil once the held body could not serve: reads resolve the URL.
    private let body: Locked<OpenedBody?>

    init(_ url: ImageURL, body: OpenedBody, repository: ImageRepository) {
        self.url = url
        self.repository = repository
        self.body = Locked(body)
    }

    /// Bytes `offset ..< offset + count` (fewer at the end), as soon as they have arrived.
    func read(
        offset: Int, count: Int, interest: Interest?,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        switch body.withLock({ $0 }) {
        case nil:
            repository.read(url, offset: offset, count: count, interest: interest, reply: reply)
        case .bytes(let whole):
            reply(.success(ImageSlice(whole.bytes, size: whole.count, offset: offset, count: count)))
        case .download(let download):
            download.read(offset: offset, count: count, interest: interest) { [self] result in
                guard case .failure(let error) = result, case .failed = download.phase else { return reply(result) }
                // The image changed under this open: another version must not finish what it began to read.
                if case .changed = error { return reply(result) }
                resolveAgain(offset: offset, count: count, interest: interest, reply: reply)
            }
        case .disk(let record):
            guard let slice = repository.readOpened(record, of: url, offset: offset, count: count) else {
                return resolveAgain(offset: offset, count: count, interest: interest, reply: reply)
            }
            if slice.bytes.count == record.size {
                // The whole body came into memory: later reads take it from there.
                body.withLock { $0 = .bytes(ImageSlice(bytes: slice.bytes, offset: 0, count: record.size)) }
            }
            reply(.success(slice))
        }
    }

    /// The held body cannot serve any more: this read and the later ones resolve the URL.
    private func resolveAgain(
        offset: Int, count: Int, interest: Interest?,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        body.withLock { $0 = nil }
        repository.read(url, offset: offset, count: count, interest: interest, reply: reply)
    }
}

// MARK: - OpenDecision

/// The one place that decides how an open file is answered, from what the open found (``ImageFilesystem/OpenFile``):
/// read with direct IO (generated files, placeholders, a large image still arriving and open nowhere else), through
/// the page cache kept across opens, or by the kernel itself from a registered file (FUSE passthrough). The adapter
/// carries the answer out (and hands a preload to the kernel first); it keeps only the calls into libfuse
/// (``BackingFileRegistering``, the page-cache probe).
///
/// It keeps the kernel's rule for mixing the modes: while a file of an inode is open with passthrough, every open of
/// that inode must use passthrough with the same backing file, and an inode with files open through the page cache
/// gets no passthrough open (the kernel fails such an open with EIO).
///
/// Guarantees: an open is counted by ``begin(_:file:pagesCached:bypassWhileArriving:)`` before its answer is sent and
/// uncounted by ``end(_:)`` at its release (which the kernel sends after it has let go of the file, so an inode's mode
/// here never ends before the kernel's does), or when its answer never reached the kernel; a backing id is registered
/// once per inode while passthrough opens of it exist and dropped after the last one ends; a later open of an inode
/// whose bytes changed while passthrough opens existed is answered with passthrough too, but with its reads sent to
/// imgfs (the new bytes). Direct-IO answers of generated files are not counted.
public final class OpenDecision: Sendable {
    /// How one open is answered.
    public enum Answer: Equatable, Sendable {
        /// Every read comes to imgfs, past the page cache.
        case directIO
        /// Reads go through the kernel's page cache, whose pages stay valid across opens (an image's bytes do not
        /// change while its size and mtime do not; a refresh with other bytes invalidates them explicitly).
        case pageCache
        /// The kernel reads the registered file `backingId` by itself; with `readsFromDaemon` (the inode's bytes
        /// changed since it was registered) the reads come to imgfs, past the page cache.
        case passthrough(backingId: Int32, readsFromDaemon: Bool)
    }

    private enum InodeMode {
        case pageCache(opens: Int)
        /// `body` is held so that its identity cannot be taken by a later body while the kernel reads its file.
        case passthrough(opens: Int, backingId: Int32, body: KernelReadableBody)
    }

    private let backing: (any BackingFileRegistering)?
    private let modes = Locked<[UInt64: InodeMode]>([:])

    /// Decides opens; `backing` registers files for passthrough (nil: the mount does not use it).
    public init(backing: (any BackingFileRegistering)? = nil) {
        self.backing = backing
    }

    /// Whether opens may use passthrough now.
    public var passthroughIsUsable: Bool { backing?.isUsable == true }

    /// Whether this open of `inode` would choose the inode's mode with passthrough unless the kernel still caches the
    /// image's pages: the adapter may first find that out and pass it to
    /// ``begin(_:file:pagesCached:bypassWhileArriving:)``.
    public func asksWhetherPagesAreCached(_ inode: UInt64, file: ImageFilesystem.OpenFile) -> Bool {
        !file.directIO && file.kernelReadable != nil && passthroughIsUsable && modes.withLock { $0[inode] == nil }
    }

    /// Counts an open of `inode` and says how to answer it. With `pagesCached` (the kernel still holds the image's
    /// pages), an inode without open files stays with the page cache: its reads are served from there without a copy
    /// more, and a passthrough open would throw those pages away in the opener's time. `bypassWhileArriving`: the mount
    /// lets a large image still arriving and open nowhere else be read past the page cache.
    public func begin(
        _ inode: UInt64, file: ImageFilesystem.OpenFile, pagesCached: Bool = false, bypassWhileArriving: Bool = false
    ) -> Answer {
        if file.directIO { return .directIO }
        let answer = modes.withLock { modes -> Answer in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = .pageCache(opens: opens + 1)
                return .pageCache
            case .passthrough(let opens, let backingId, let registered)?:
                modes[inode] = .passthrough(opens: opens + 1, backingId: backingId, body: registered)
                let readsFromDaemon = file.kernelReadable?.identity != registered.identity
                return .passthrough(backingId: backingId, readsFromDaemon: readsFromDaemon)
            case nil:
                if let body = file.kernelReadable, !pagesCached, let backing, backing.isUsable,
                    let backingId = backing.register(body.descriptor)
                {
                    modes[inode] = .passthrough(opens: 1, backingId: backingId, body: body)
                    return .passthrough(backingId: backingId, readsFromDaemon: false)
                }
                modes[inode] = .pageCache(opens: 1)
                return .pageCache
            }
        }
        // Each byte goes once from imgfs into the reader's buffer (the kernel's read-ahead does not apply). Counted as
        // a page-cache open all the same: while it lives no open of the image asks for passthrough, which the kernel
        // refuses next to a shared mapping of it.
        if answer == .pageCache && file.arrivingAlone && bypassWhileArriving { return .directIO }
        return answer
    }

    /// An open of `inode` that ``begin(_:file:pagesCached:bypassWhileArriving:)`` counted ended: released by the
    /// kernel, or its answer never reached the kernel.
    public func end(_ inode: UInt64) {
        modes.withLock { modes in
            switch modes[inode] {
            case .pageCache(let opens)?:
                modes[inode] = opens > 1 ? .pageCache(opens: opens - 1) : nil
            case .passthrough(let opens, let backingId, let registered)?:
                if opens > 1 {
                    modes[inode] = .passthrough(opens: opens - 1, backingId: backingId, body: registered)
                    return
                }
                modes[inode] = nil
                // Dropped under the lock: a later open of this inode registers anew only after this id is gone.
                backing?.unregister(backingId)
            case nil:
                break
            }
        }
    }
}
