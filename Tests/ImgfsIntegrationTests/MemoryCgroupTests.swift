import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 14, item 6: a daemon in a memory cgroup (v1 here: this machine runs hybrid cgroups with the memory controller
/// on v1) shrinks its caches before the kernel's OOM killer stops it.
/// The test process's own cgroup v1 memory group.
enum CgroupV1 {
    /// Its directory, where a child group may be made; nil without a writable v1 memory controller.
    static var ownMemoryGroup: String? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("memory") else { continue }
            let directory = "/sys/fs/cgroup/memory" + (fields[2] == "/" ? "" : String(fields[2]))
            return FileManager.default.isWritableFile(atPath: directory) ? directory : nil
        }
        return nil
    }
}

@Suite("Memory cgroup", .serialized, .enabled(if: FuseAvailability.available && CgroupV1.ownMemoryGroup != nil))
struct MemoryCgroupTests {
    /// A distinct JPEG per index: a comment segment with the index right after the start-of-image marker.
    static func variant(_ index: Int, of image: [UInt8]) -> [UInt8] {
        var stamp = Array("imgfs-\(index)".utf8)
        stamp += [UInt8](repeating: 0x20, count: 14 - stamp.count)
        return [0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x10] + stamp + image[2...]
    }

    /// Answers `/large<N>.jpg` with variant N of `image`.
    static func serveVariants(of image: [UInt8], on origin: TestOrigin) {
        origin.route(prefix: "/large") { request in
            let index = Int(request.path.dropFirst(6).prefix { $0.isNumber }) ?? 0
            return .ok(variant(index, of: image), contentType: "image/jpeg")
        }
    }

    /// Reads variants 0 ..< `count` through `mount` with four reader threads; returns the indices read wrong.
    static func readVariants(
        _ count: Int, of image: [UInt8], through mount: MountedImgfs,
        from origin: TestOrigin
    ) -> [Int] {
        let readers = 4
        let wrong = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for reader in 0..<readers {
            Thread.detachNewThread {
                for index in stride(from: reader, to: count, by: readers) {
                    let read = PosixFile.read(mount.path(origin.baseURL + "/large\(index).jpg"))
                    if read != .success(variant(index, of: image)) { wrong.withLock { $0.append(index) } }
                }
                done.signal()
            }
        }
        for _ in 0..<readers { #expect(done.wait(timeout: .now() + 300) == .success) }
        return wrong.withLock { $0 }
    }

    @Test("in a 150 MiB v1 memory cgroup, 500 MB of distinct images are read whole: no OOM kill, the mount works")
    func readsThroughACgroupLimit() throws {
        let parent = try #require(CgroupV1.ownMemoryGroup)
        let group = "\(parent)/imgfs-test-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        defer {
            // The group can go once the daemon has exited (it is stopped first, below).
            Poll.until(interval: 0.05) { rmdir(group) == 0 }
        }
        try "150M".write(toFile: group + "/memory.limit_in_bytes", atomically: false, encoding: .utf8)
        let image = try Fixtures.largeJPEG()
        let count = (500 << 20) / image.count + 1
        try withMountedOrigin { origin, mount in
            Self.serveVariants(of: image, on: origin)
            try "\(mount.process.pid)".write(toFile: group + "/cgroup.procs", atomically: false, encoding: .utf8)
            #expect(
                mount.waitForLog(timeout: 10) { $0.contains("memory cgroup v1") && $0.contains("limit 150 MiB") },
                "the daemon noticed its cgroup's limit")
            let wrong = Self.readVariants(count, of: image, through: mount, from: origin)
            #expect(wrong.isEmpty, "every byte right: \(wrong)")
            #expect(mount.process.isRunning, "not OOM-killed")
            #expect(PosixFile.read(mount.path(origin.baseURL + "/large0.jpg")) == .success(Self.variant(0, of: image)))
            let failures = (try? String(contentsOfFile: group + "/memory.oom_control", encoding: .utf8)) ?? ""
            #expect(failures.contains("oom_kill 0"), "the kernel killed nothing in the group: \(failures)")
        }
    }

    /// The resident set of process `pid` (heap, mapped files and shared-memory bodies), in bytes.
    static func residentBytes(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return (line?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) * 1024
    }

    @Test("with --memory-limit 16M and no cgroup, 300 MB of distinct images keep RSS within 128 MiB of idle")
    func residentSetFollowsTheBudget() throws {
        let image = try Fixtures.largeJPEG()
        let count = (300 << 20) / image.count + 1
        try withMountedOrigin(["--memory-limit", "16M"]) { origin, mount in
            Self.serveVariants(of: image, on: origin)
            let idle = Self.residentBytes(mount.process.pid)
            let peak = Locked(0)
            let reading = Locked(true)
            Thread.detachNewThread {
                Poll.until(timeout: 3600) {  // samples every 10 ms until the reads are done
                    let rss = Self.residentBytes(mount.process.pid)
                    peak.withLock { $0 = max($0, rss) }
                    return !reading.withLock { $0 }
                }
            }
            let wrong = Self.readVariants(count, of: image, through: mount, from: origin)
            reading.withLock { $0 = false }
            #expect(wrong.isEmpty, "every byte right: \(wrong)")
            // Above the idle daemon (whose size depends on the libraries and threads it starts, not on the budget):
            // 16 MiB of cache, as much queued for the disk, four transfers of 6.7 MB, and what the allocator keeps in
            // the arenas of the fetch and FUSE threads (92 MiB in all measured alone; 300 MB unbounded would fail).
            let growth = peak.withLock { $0 } - idle
            #expect(growth < 128 << 20, "RSS grew \(growth >> 20) MiB above the idle \(idle >> 20) MiB")
        }
    }
}
