import Foundation
import Glibc
import ImgfsTestSupport
import Synchronization
import Testing

/// The kernel's read-ahead for the mount's files (its backing device's `read_ahead_kb`), which also sizes the READ
/// requests of a file the kernel does not hold: set by the mount, kept by the INIT answer.
@Suite("Kernel read-ahead", .serialized, .enabled(if: FuseAvailability.available))
struct KernelReadAheadTests {
    /// The mount's `read_ahead_kb`, read from sysfs by the device number of its root.
    static func readAhead(of mount: MountedImgfs) throws -> Int {
        var status = stat()
        #expect(stat(mount.mountPoint, &status) == 0)
        let dev = UInt64(status.st_dev)  // glibc's encoding (gnu_dev_major, gnu_dev_minor are macros)
        let major = (dev >> 8) & 0xfff | (dev >> 32) & ~0xfff
        let minor = dev & 0xff | (dev >> 12) & ~0xff
        let device = "\(major):\(minor)"
        let text = try String(contentsOfFile: "/sys/class/bdi/\(device)/read_ahead_kb", encoding: .utf8)
        return try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test("a mount reads ahead 1 MiB by default, the value of --tune kernel-read-ahead when given, the kernel's with 0")
    func readAheadOfTheMount() throws {
        let cases: [([String], Int)] = [
            ([], 1024), (["--tune", "kernel-read-ahead=512"], 512), (["--tune", "kernel-read-ahead=0"], 128)
        ]
        for (arguments, expected) in cases {
            let mount = try MountedImgfs(arguments: arguments)
            defer { mount.stop() }
            #expect(try Self.readAhead(of: mount) == expected, "with \(arguments)")
        }
    }

    @Test("a large image read with 1 MiB READs while it downloads arrives whole, from several readers at once")
    func largeReadsWhileDownloading() throws {
        let image = try Fixtures.largeJPEG()
        var response = OriginResponse.ok(image, contentType: "image/jpeg")
        response.bytesPerSecond = 8 * 1024 * 1024
        try withMountedOrigin { origin, mount in
            origin.route("/large.jpg", response)
            let path = mount.path(origin.baseURL + "/large.jpg")
            let results = Mutex<[Result<[UInt8], Errno>]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                let result = PosixFile.read(path)
                results.withLock { $0.append(result) }
            }
            #expect(results.withLock { $0 }.count == 4)
            for result in results.withLock({ $0 }) { #expect(result == .success(image)) }
            #expect(origin.requestCount("/large.jpg") == 1)
        }
    }
}
