import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsSystem

/// Checks on mount points, the list of imgfs mounts, and registering long URLs with a mount.
enum MountPoint {
    /// Why a mount point cannot be used: printed as one line, `Error: …`, without the usage text.
    struct Unusable: Error, CustomStringConvertible {
        let description: String
    }

    /// The absolute path of `path` if it is an existing, empty (unless `allowNonEmpty`) directory that no imgfs is
    /// mounted on, on a machine with /dev/fuse.
    static func validated(_ path: String, allowNonEmpty: Bool = false) throws -> String {
        guard access("/dev/fuse", R_OK | W_OK) == 0 else {
            throw Unusable(
                description:
                    "/dev/fuse is missing or not accessible: load the fuse module (modprobe fuse) or run where FUSE "
                    + "is allowed"
            )
        }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        var status = stat()
        guard stat(absolute, &status) == 0 else {
            switch errno {
            case ENOENT:
                throw Unusable(description: "mount point \(absolute) does not exist")
            case ENOTCONN:
                throw dead(absolute)
            case let code:
                throw Unusable(description: "mount point \(absolute): \(String(cString: strerror(code)))")
            }
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw Unusable(description: "mount point \(absolute) is not a directory")
        }
        if isMounted(absolute) {
            // stat can answer from the kernel's attribute cache after the daemon died; statvfs always asks it.
            var filesystem = statvfs()
            if statvfs(absolute, &filesystem) != 0, errno == ENOTCONN { throw dead(absolute) }
            throw Unusable(
                description:
                    "mount point \(absolute) is already an imgfs mount (unmount it first: fusermount3 -u \(absolute))")
        }
        if !allowNonEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: absolute),
            !entries.isEmpty
        {
            throw Unusable(
                description:
                    "mount point \(absolute) is not empty (imgfs would hide its files; use -o nonempty "
                    + "to mount anyway)"
            )
        }
        return absolute
    }

    private static func dead(_ absolute: String) -> Unusable {
        Unusable(
            description:
                "mount point \(absolute) is a dead FUSE mount (its daemon has gone): unmount it with fusermount3 -u "
                + "\(absolute)"
        )
    }

    /// The mount points of the imgfs filesystems mounted now (from /proc/self/mountinfo).
    static func imgfsMounts() -> [String] {
        MountTable.current().entries.filter { $0.type == "fuse.imgfs" }.map(\.mountPoint)
    }

    /// Whether an imgfs filesystem is mounted at `path` now.
    static func isMounted(_ path: String) -> Bool {
        imgfsMounts().contains(path)
    }

    /// Teaches the mount at `mount` a long URL by looking up its chunked name one directory at a time with `openat`:
    /// each step is a short relative lookup, so no path limit applies; nothing is opened in the filesystem, and the
    /// working directory is left alone (safe while other threads read). Returns the errno of the step that failed
    /// and whether it was the last one (the image's own lookup: the name is registered even when that fails), or nil.
    static func register(chunks: [String], in mount: String) -> (errno: Int32, atLast: Bool)? {
        var directory = open(
            "\(mount)/\(ImagePath.imagesDirectory)/\(ImagePath.chunkDirectory)",
            pathOnly | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return (errno, false) }
        defer { close(directory) }
        for chunk in chunks.dropLast() {
            let next = openat(directory, chunk, pathOnly | O_DIRECTORY | O_CLOEXEC)
            guard next >= 0 else { return (errno, false) }
            close(directory)
            directory = next
        }
        let last = openat(directory, chunks.last ?? "", pathOnly | O_CLOEXEC)
        guard last >= 0 else { return (errno, true) }
        close(last)
        return nil
    }

    /// `O_PATH` (Linux, on every architecture Swift supports), which the Glibc module does not import: open for
    /// path walks only, so that the kernel looks the name up without opening anything in the filesystem.
    private static let pathOnly: Int32 = 0o10_000_000
}
