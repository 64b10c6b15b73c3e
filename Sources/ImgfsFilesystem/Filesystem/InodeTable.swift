import ImgfsModel

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
