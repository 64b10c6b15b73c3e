import Foundation
import ImgfsModel

/// Who sent a request: the user id of the calling process, as the kernel gives it with each request.
public struct Caller: Equatable, Sendable {
    /// The calling process's user id.
    public var uid: UInt32

    /// The caller with user id `uid`.
    public init(uid: UInt32) {
        self.uid = uid
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
