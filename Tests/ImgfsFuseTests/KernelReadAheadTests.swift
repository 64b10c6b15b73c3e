import ImgfsSystem
import Testing

@testable import ImgfsFuse

/// Finding a FUSE mount's backing device in `/proc/self/mountinfo` text, as the kernel writes it.
@Suite("Kernel read-ahead: the mount's device")
struct KernelReadAheadDeviceTests {
    static let table = MountTable(
        """
        22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
        96 22 0:39 / /tmp/a\\040b rw,nosuid,nodev,relatime shared:50 - fuse.imgfs imgfs rw,user_id=0,group_id=0
        97 22 0:40 / /tmp/plain rw,relatime - tmpfs tmpfs rw
        98 22 0:41 / /tmp/plain rw,nosuid,nodev,relatime - fuse.imgfs imgfs rw,user_id=0,group_id=0
        99 22 0:42 / /tmp/raw rw,relatime - fuse /dev/fuse rw
        """)

    @Test("the device of the FUSE mount at a path, with escaped spaces, the last one mounted there, plain fuse too")
    func device() {
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/a b", in: Self.table) == "0:39")
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/plain", in: Self.table) == "0:41")
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/raw", in: Self.table) == "0:42")
    }

    @Test("no device for a path that is not a FUSE mount, or only a prefix of one")
    func noDevice() {
        #expect(KernelReadAhead.device(ofMountAt: "/", in: Self.table) == nil)
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/a", in: Self.table) == nil)
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/a\\040b", in: Self.table) == nil)
        #expect(KernelReadAhead.device(ofMountAt: "/tmp/a b", in: MountTable("")) == nil)
        let failure = KernelReadAhead.set(kibibytes: 1024, mountPoint: "/no/such/mount")
        #expect(failure?.hasPrefix("no FUSE mount at /no/such/mount") == true)
    }
}
