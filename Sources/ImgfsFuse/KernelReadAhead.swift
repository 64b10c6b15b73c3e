import Foundation

/// The kernel's read-ahead window for the files of one FUSE mount: its backing device's `read_ahead_kb`
/// (`/sys/class/bdi/MAJOR:MINOR/`), which also sizes the READ requests the kernel sends for a file that is not in its
/// page cache (up to 1 MiB each, libfuse's largest). The kernel's default is 128 KiB, so a 16 MB image cold from the
/// network costs 128 READ round trips; at 1 MiB it costs 16.
///
/// Guarantees: only the backing device of the FUSE mount at the given mount point is changed; the device is found in
/// `/proc/self/mountinfo`, never by a request to the mount (which could not be answered before it serves); a mount
/// that cannot be changed (no privilege, no such mount) is left as it is and the reason returned.
enum KernelReadAhead {
    /// Sets the read-ahead of the FUSE mount at `mountPoint` (an absolute path without symbolic links: resolving one
    /// would ask the mount) to `kibibytes`; nil when done, else why it was not.
    static func set(kibibytes: Int, mountPoint: String) -> String? {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
            let device = device(ofMountAt: mountPoint, in: table)
        else { return "no FUSE mount at \(mountPoint) in /proc/self/mountinfo" }
        let file = "/sys/class/bdi/\(device)/read_ahead_kb"
        let descriptor = open(file, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "cannot open \(file): \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        let written = "\(kibibytes)\n".withCString { write(descriptor, $0, strlen($0)) }
        return written < 0 ? "cannot write \(file): \(String(cString: strerror(errno)))" : nil
    }

    /// The device (`MAJOR:MINOR`) of the last FUSE mount at `path` in a `/proc/self/mountinfo` text, or nil.
    static func device(ofMountAt path: String, in mountInfo: String) -> String? {
        var found: String?
        for line in mountInfo.split(separator: "\n") {
            // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count >= 7, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count,
                fields[dash + 1] == "fuse" || fields[dash + 1].hasPrefix("fuse."),
                unescape(fields[4]) == path
            else { continue }
            found = String(fields[2])
        }
        return found
    }

    /// A mountinfo field with its octal escapes (`\040` for a space, `\011`, `\012`, `\134`) turned back into bytes.
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
                let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
