import Foundation
import ImgfsSystem

/// The kernel's read-ahead window for the files of one FUSE mount: its backing device's `read_ahead_kb`
/// (`/sys/class/bdi/MAJOR:MINOR/`), which also sizes the READ requests the kernel sends for a file that is not in its
/// page cache (up to 1 MiB each, libfuse's largest). The kernel's default is 128 KiB, so a 16 MB image cold from the
/// network costs 128 READ round trips; at 1 MiB it costs 16.
///
/// Guarantees: only the backing device of the FUSE mount at the given mount point is changed; the device is found in
/// the mount table (``MountTable``), never by a request to the mount (which could not be answered before it serves);
/// a mount that cannot be changed (no privilege, no such mount) is left as it is and the reason returned.
enum KernelReadAhead {
    /// Sets the read-ahead of the FUSE mount at `mountPoint` (an absolute path without symbolic links: resolving one
    /// would ask the mount) to `kibibytes`; nil when done, else why it was not.
    static func set(kibibytes: Int, mountPoint: String) -> String? {
        guard let device = device(ofMountAt: mountPoint, in: MountTable.current()) else {
            return "no FUSE mount at \(mountPoint) in /proc/self/mountinfo"
        }
        let file = "/sys/class/bdi/\(device)/read_ahead_kb"
        let descriptor = open(file, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "cannot open \(file): \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        let written = "\(kibibytes)\n".withCString { write(descriptor, $0, strlen($0)) }
        return written < 0 ? "cannot write \(file): \(String(cString: strerror(errno)))" : nil
    }

    /// The device (`MAJOR:MINOR`) of the last FUSE mount at `path` in `table`, or nil.
    static func device(ofMountAt path: String, in table: MountTable) -> String? {
        table.entries.last { $0.isFUSE && $0.mountPoint == path }?.device
    }
}
