import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 37: a listing of a probed list hands the kernel each entry's attributes (READDIRPLUS), so `stat` of every
/// entry after it makes no LOOKUP at all, and the kernel's references that come with them are counted as lookups:
/// after the kernel drops its caches (FORGET) the daemon forgets them, and every name still answers.
@Suite("Listings with attributes through the mount", .serialized, .enabled(if: FuseAvailability.available))
struct ListingAttributesTests {
    /// Lists `directory` with `os.listdir` and stats every name; one `name<TAB>size` line each (`-errno` for a stat
    /// that failed), in listing order.
    static let listAndStat = """
        import os, sys
        d = sys.argv[1]
        for n in os.listdir(d):
            try:
                print(f"{n}\\t{os.stat(os.path.join(d, n)).st_size}")
            except OSError as e:
                print(f"{n}\\t-{e.errno}")
        """

    static func listed(_ directory: String) throws -> [String: Int] {
        let run = try ChildProcess.run("/usr/bin/python3", ["-c", listAndStat, directory])
        var sizes: [String: Int] = [:]
        for line in run.output.split(separator: "\n") {
            let parts = line.split(separator: "\t")
            if parts.count == 2, let size = Int(parts[1]) { sizes[String(parts[0])] = size }
        }
        return sizes
    }

    /// Drops the kernel's dentries and inodes (the kernel FORGETs the mount's inodes it let go of).
    static func dropKernelCaches() {
        let fd = open("/proc/sys/vm/drop_caches", O_WRONLY)
        guard fd >= 0 else { return }
        _ = write(fd, "2\n", 2)
        close(fd)
    }

    @Test("after listing a probed list, stat of every entry makes no lookup; counts survive the kernel's forgets")
    func statAfterListing() throws {
        let cache = "/tmp/imgfs-plus-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let fixture = try ListFixture(cacheDirectory: cache)
        var stopped = false
        defer { if !stopped { fixture.stop() } }
        fixture.origin.route("/p/broken.png", .status(500))
        // More entries than one READDIRPLUS answer holds, so the listing is read in several requests.
        let count = 400
        let text = (0..<count).map { fixture.url($0) + "\n" }.joined() + "\(fixture.origin.baseURL)/p/broken.png\n"
        #expect(try fixture.add("big", text).status == 0, "list add probes every entry")
        let index = "\(fixture.mount.mountPoint)/lists/big/.index.jsonl"
        let learnt = Poll.until(timeout: 30) {
            let lines = ((try? String(contentsOfFile: index, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.count == count + 1 && lines.filter { $0.contains("\"status\":\"ok\"") }.count == count
                && lines.last?.contains("\"status\":\"failed\"") == true
        }
        #expect(learnt, "the list learns every entry")
        let names = try fixture.ls("lists/big")
        #expect(names.count == count + 1)

        // The images leave the cache and the origin stops: only the list's facts can answer.
        fixture.stop()
        stopped = true
        for item in (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? [] where item != "lists" {
            try FileManager.default.removeItem(atPath: "\(cache)/\(item)")
        }
        let mount = try MountedImgfs(cacheDirectory: cache)
        var unmounted = false
        defer { if !unmounted { mount.stop() } }
        let directory = "\(mount.mountPoint)/lists/big"
        let before = mount.statistics()
        let sizes = try Self.listed(directory)
        let after = mount.statistics()
        let icons = fixture.icons
        #expect(sizes.count == count + 1)
        var wrong = 0
        for (offset, name) in names.enumerated() where offset < count {
            if sizes[name] != icons[offset % icons.count].count { wrong += 1 }
        }
        #expect(wrong == 0, "every probed entry has its size")
        #expect(sizes[names[count]] == -Int(ENOENT), "the failed entry is tried again, and fails")
        let lookups = (after["lookups"] ?? 0) - (before["lookups"] ?? 0)
        // The list's folder, the failed entry (a lookup that tries it again), stats.json: nothing per probed entry.
        #expect(lookups < 10, "stat after the listing looked up \(lookups) names")
        #expect((after["listed_with_attributes"] ?? 0) >= Double(count))
        #expect((after["known_inodes"] ?? 0) - (before["known_inodes"] ?? 0) >= Double(count))

        // `ls -l` and scandir list every name, with the same sizes.
        let long = try ChildProcess.run("/bin/ls", ["-l", directory])
        // The failed entry prints as `-????????? ? …` (its stat fails), as before.
        #expect(long.output.split(separator: "\n").filter { $0.hasPrefix("-r--r--r--") }.count == count)
        #expect(long.output.split(separator: "\n").filter { $0.hasPrefix("-?") }.count == 1)
        let scanned = try ChildProcess.run(
            "/usr/bin/python3",
            ["-c", "import os,sys; print(len([e for e in os.scandir(sys.argv[1]) if e.is_file()]))", directory])
        #expect(scanned.output == "\(count + 1)\n")

        // The kernel lets go of the entries: the daemon forgets them (nothing is leaked) and every name still answers.
        Self.dropKernelCaches()
        let forgotten = mount.waitForStatistics(timeout: 10) { ($0["known_inodes"] ?? .infinity) < 10 }
        #expect(
            forgotten, "known inodes after the kernel dropped its caches: \(mount.statistics()["known_inodes"] ?? -1)")
        let again = try Self.listed(directory)
        #expect(again == sizes)
        Self.dropKernelCaches()
        var statted = 0
        for (offset, name) in names.enumerated() where offset < count {
            if PosixFile.size("\(directory)/\(name)") == .success(icons[offset % icons.count].count) { statted += 1 }
        }
        #expect(statted == count, "stat by name after the forgets")
        unmounted = true
        #expect(mount.stop() == 0, "a clean unmount")
        #expect(!mount.log.contains("Fatal error"))
    }

    @Test("a list replaced under the same names: its entries, kept long by the kernel, are looked up anew")
    func replacedList() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let other = fixture.icons[5]
        #expect(other.count != fixture.icons[0].count)
        fixture.origin.route(prefix: "/w/") { _ in .ok(other, contentType: "image/png") }
        #expect(try fixture.add("swap", "\(fixture.url(0))\n\(fixture.url(1))\n").status == 0)
        let directory = "\(fixture.mount.mountPoint)/lists/swap"
        let entry = "\(directory)/00001-0.png"
        _ = try Self.listed(directory)
        #expect(PosixFile.size(entry) == .success(fixture.icons[0].count))
        // The same name now stands for another URL (another image).
        let text = "\(fixture.origin.baseURL)/w/0.png\n\(fixture.url(1))\n"
        #expect(try fixture.add("swap", text, extra: ["--no-probe"]).status == 0)
        #expect(try fixture.ls("lists/swap") == ["00001-0.png", "00002-1.png"])
        let renewed = Poll.until(timeout: 5, interval: 0.05) { PosixFile.size(entry) == .success(other.count) }
        #expect(renewed, "the entry answers for the new URL within the names' second")
    }

    @Test("a host's folder: the cached images come with their attributes")
    func hostFolder() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        for index in 0..<3 {
            #expect(PosixFile.read(fixture.mount.path(fixture.url(index))) == .success(fixture.icons[index]))
        }
        let directory = "\(fixture.mount.mountPoint)/hosts/127.0.0.1:\(fixture.origin.port)"
        let requests = fixture.origin.totalRequests
        let before = fixture.mount.statistics()
        let sizes = try Self.listed(directory)
        let after = fixture.mount.statistics()
        #expect(sizes.values.sorted() == (0..<3).map { fixture.icons[$0].count }.sorted())
        #expect((after["lookups"] ?? 0) - (before["lookups"] ?? 0) < 4, "no lookup per cached image")
        #expect(fixture.origin.totalRequests == requests)
    }
}
