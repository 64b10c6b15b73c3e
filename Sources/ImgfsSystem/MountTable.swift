/// The mounts the kernel lists for this process (`/proc/self/mountinfo`): where each is, its device, its type and,
/// for FUSE, its owner.
/// Reading the table never touches a mounted file system, so it is safe before a FUSE mount serves.
///
/// Guarantees: mount points come back as the kernel names them, with mountinfo's octal escapes (`\040` for a space,
/// `\011`, `\012`, `\134`) decoded; the entries are in the kernel's order (a later mount at a path hides an earlier
/// one); a table that cannot be read is empty.
public struct MountTable: Sendable {
    /// One mounted file system.
    public struct Entry: Sendable, Equatable {
        /// `MAJOR:MINOR` of its device (for a FUSE mount, the name of its `/sys/class/bdi/` directory).
        public let device: String
        /// The absolute path it is mounted on, with mountinfo's octal escapes decoded.
        public let mountPoint: String
        /// As mount(8) names it: `ext4`, `tmpfs`, `fuse`, `fuse.imgfs`, …
        public let type: String
        /// The `user_id=` of its super options: for a FUSE mount, the user who mounted it (whose daemon serves it);
        /// nil when the options carry none.
        public var userID: UInt32? = nil

        /// Whether it is a FUSE file system (`fuse`, or `fuse.SUBTYPE`).
        public var isFUSE: Bool { type == "fuse" || type.hasPrefix("fuse.") }
    }

    /// The mounts, in the order the kernel lists them.
    public let entries: [Entry]

    /// The table of this process now.
    public static func current() -> MountTable {
        MountTable(SystemFile.contents(of: "/proc/self/mountinfo", limit: 64 << 20) ?? "")
    }

    /// The table in a mountinfo text: `ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - TYPE SOURCE …`.
    public init(_ mountInfo: String) {
        entries = mountInfo.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count >= 7, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { return nil }
            let superOptions = dash + 3 < fields.count ? fields[dash + 3].split(separator: ",") : []
            let userID = superOptions.first { $0.hasPrefix("user_id=") }.flatMap { UInt32($0.dropFirst(8)) }
            return Entry(
                device: String(fields[2]), mountPoint: Self.unescape(fields[4]), type: String(fields[dash + 1]),
                userID: userID)
        }
    }

    /// A mountinfo field with its octal escapes turned back into bytes.
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
