import Foundation
import Testing

@testable import ImgfsSystem

/// The own memory cgroup as CgroupMemoryWatch reads it, from fake /proc and /sys files.
@Suite("Memory cgroup watch")
struct CgroupMemoryWatchTests {
    @Test("the v1 memory line of /proc/self/cgroup, alone or with other controllers")
    func parsesV1Lines() {
        #expect(
            CgroupPaths.parseV1MemoryGroup("9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n") == "/process_api/abc")
        #expect(CgroupPaths.parseV1MemoryGroup("3:cpu,memory:/x\n") == "/x")
        #expect(CgroupPaths.parseV1MemoryGroup("0::/user.slice\n") == nil)
    }

    @Test("a v1 group's limit, usage and inactive file pages (hybrid: v1 first); no limit below MemTotal is nil")
    func readsV1() throws {
        let files = try FakeFiles()
        try files.write("cgroup", "4:memory:/group\n0::/\n")
        try FileManager.default.createDirectory(atPath: files.path("memory/group"), withIntermediateDirectories: true)
        try files.write("memory/group/memory.limit_in_bytes", "\(150 * mebibyte)\n")
        try files.write("memory/group/memory.usage_in_bytes", "\(120 * mebibyte)\n")
        try files.write("memory/group/memory.stat", "cache 1\ntotal_inactive_file \(20 * mebibyte)\n")
        let reading = CgroupMemoryWatch.read(procSelfCgroup: files.path("cgroup"), root: files.directory.path)
        #expect(
            reading
                == .init(
                    version: 1, path: "/group", limit: 150 * mebibyte, usage: 120 * mebibyte,
                    inactiveFile: 20 * mebibyte))
        #expect(reading?.workingSet == 100 * mebibyte)
        try files.write("memory/group/memory.limit_in_bytes", "9223372036854771712\n")
        #expect(CgroupMemoryWatch.read(procSelfCgroup: files.path("cgroup"), root: files.directory.path) == nil)
    }

    @Test("a v2 group's memory.max and memory.current, on the unified mount")
    func readsV2() throws {
        let files = try FakeFiles()
        try files.write("cgroup", "0::/app.slice/imgfs.service\n")
        try FileManager.default.createDirectory(
            atPath: files.path("app.slice/imgfs.service"),
            withIntermediateDirectories: true)
        try files.write("app.slice/imgfs.service/memory.max", "\(64 * mebibyte)\n")
        try files.write("app.slice/imgfs.service/memory.current", "\(10 * mebibyte)\n")
        try files.write("app.slice/imgfs.service/memory.stat", "anon 1\ninactive_file \(mebibyte)\n")
        let reading = CgroupMemoryWatch.read(procSelfCgroup: files.path("cgroup"), root: files.directory.path)
        #expect(
            reading
                == .init(
                    version: 2, path: "/app.slice/imgfs.service", limit: 64 * mebibyte,
                    usage: 10 * mebibyte, inactiveFile: mebibyte))
    }
}
