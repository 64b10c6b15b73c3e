import CTmpfsShims
import Glibc

/// A tmpfs instance of imgfs's own, attached to no directory (made with the new mount API, so nothing shows in the
/// mount table and nothing needs cleaning up), made with `huge=within_size` whatever the system chose for memfds
/// (`shmem_enabled`, `never` on Debian's kernels): its files keep large image bodies in pages larger than 4 KiB, sized
/// by how a file grows (``SharedMemoryFile/PageSize``: 256 KiB by default on Linux 6.14 and later, 2 MiB huge pages
/// with `--tune pages=huge`).
///
/// Why: a body of 10 MB takes forty 256 KiB pages instead of 2,560 pages of 4 KiB. On this project's test machine
/// (Linux 6.18) a cold large image cost 0.73 instead of 1.13 ms of the machine's CPU per MB, and reading it again (by
/// passthrough, as a program reading a cached image does) ran at about 1.5× tmpfs, whose pages are 4 KiB.
///
/// Guarantees: the instance has no size or file-count limit of its own (the memory cache's budget bounds it); its
/// files have no name, so they vanish with their last descriptor or mapping; the instance goes away with its last
/// file and the process. Needs CAP_SYS_ADMIN (as passthrough does) and Linux 5.2 or later; ``shared`` is nil
/// otherwise, and ``unavailableReason`` says why.
public final class PrivateTmpfs: Sendable {
    private let root: Int32

    private static let made = make()

    /// The process's instance, made at first use; nil where the system refused it.
    public static var shared: PrivateTmpfs? { try? made.get() }

    /// Why ``shared`` is nil (nil when it is not).
    public static var unavailableReason: String? {
        guard case .failure(let refusal) = made else { return nil }
        return refusal.description
    }

    /// Why the instance could not be made: the system's error.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        /// The errno value of the call that failed.
        public let code: Int32
        /// The system's text for ``code``, with what it means here when it is a missing mount API or privilege.
        public var description: String {
            let reason = String(cString: strerror(code))
            switch code {
            case ENOSYS: return "this kernel has no mount API (fsopen): \(reason)"
            case EPERM: return "making a tmpfs instance needs CAP_SYS_ADMIN: \(reason)"
            default: return reason
            }
        }
    }

    private init(root: Int32) { self.root = root }

    deinit { close(root) }

    private static func make() -> Result<PrivateTmpfs, Refusal> {
        let root = imgfs_tmpfs_create("within_size")
        return root >= 0 ? .success(PrivateTmpfs(root: root)) : .failure(Refusal(code: -root))
    }

    /// A new empty file without a name, open for reading and writing; nil when the system refused one.
    func makeFile() -> Int32? {
        let file = imgfs_tmpfs_unnamed_file(root)
        return file >= 0 ? file : nil
    }
}
