import Testing

@testable import ImgfsSystem

/// The mount table read from `/proc/self/mountinfo` text, as the kernel writes it.
@Suite("Mount table")
struct MountTableTests {
    @Test("each line gives the device, the mount point with its escapes decoded, the type and the owner (user_id=)")
    func entries() {
        let table = MountTable(
            """
            22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
            96 22 0:39 / /tmp/a\\040b rw,nosuid shared:50 master:3 - fuse.imgfs imgfs rw,user_id=0
            99 22 0:42 / /tmp/raw rw,relatime - fuse /dev/fuse rw
            100 22 0:43 / /home/me/img rw - fuse.imgfs imgfs rw,user_id=1000,group_id=1000,allow_other
            short line
            """)
        #expect(
            table.entries == [
                .init(device: "259:2", mountPoint: "/", type: "ext4"),
                .init(device: "0:39", mountPoint: "/tmp/a b", type: "fuse.imgfs", userID: 0),
                .init(device: "0:42", mountPoint: "/tmp/raw", type: "fuse"),
                .init(device: "0:43", mountPoint: "/home/me/img", type: "fuse.imgfs", userID: 1000)
            ])
        #expect(table.entries.map(\.isFUSE) == [false, true, true, true])
        #expect(MountTable("").entries.isEmpty)
    }

    @Test("this process's table holds its root")
    func current() {
        #expect(MountTable.current().entries.contains { $0.mountPoint == "/" })
    }

    @Test("octal escapes of tab, newline and backslash are decoded; a lone backslash stays")
    func unescape() {
        #expect(MountTable.unescape("a\\011b\\012c\\134d") == "a\tb\nc\\d")
        #expect(MountTable.unescape("a\\b") == "a\\b")
        #expect(MountTable.unescape("end\\04") == "end\\04")
    }
}
