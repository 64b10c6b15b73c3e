import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 37 item 6: a list added with `--warm` loads itself in the background at prefetch priority, after what
/// readers wait for, and stops when the list is removed or the mount goes away.
@Suite("Lists that warm themselves", .serialized, .enabled(if: FuseAvailability.available))
struct ListWarmTests {
    /// The paths the origin was asked for that are numbered images in 1...count.
    private static func listed(_ fixture: ListFixture, _ count: Int) -> [String] {
        fixture.origin.requests().map(\.path).filter { path in
            Int(path.dropFirst(3).prefix { $0.isNumber }).map { (1...count).contains($0) } ?? false
        }
    }

    @Test("a warm list is fetched whole without any read, each URL once, after a read someone waits for")
    func warmsInTheBackground() throws {
        // One transfer at a time, 0.2 s each: the warm's entries queue up behind its first transfer.
        let fixture = try ListFixture(delay: 0.2, mountArguments: ["--tune", "max-transfers-per-host=1"])
        defer { fixture.stop() }
        let count = 12
        let added = try fixture.add(
            "train", (1...count).map(fixture.url).joined(separator: "\n"), extra: ["--warm", "--no-probe"])
        #expect(added.status == 0, "\(added.output)")
        #expect(added.output.contains("warming in the background"))
        #expect(Poll.until { fixture.origin.totalRequests > 0 }, "warming started without any read")
        Poll.elapse(0.1)
        // A read someone waits for goes before every queued warm transfer: right after the one under way.
        #expect(PosixFile.read(fixture.mount.path(fixture.url(100))).map(\.count) == .success(fixture.icons[4].count))
        let paths = fixture.origin.requests().map(\.path)
        #expect(paths.firstIndex(of: "/v/100.png").map { $0 <= 1 } == true, "the waited read went next: \(paths)")
        #expect(
            Poll.until(timeout: 30) { Set(Self.listed(fixture, count)).count == count },
            "every entry fetched: \(Self.listed(fixture, count))")
        Poll.elapse(0.3)
        #expect(Self.listed(fixture, count).count == count, "each URL once: \(Self.listed(fixture, count))")
        #expect(fixture.origin.totalRequests == count + 1)
        // The entries are cached: reading them asks the origin nothing.
        for name in try fixture.ls("lists/train") {
            #expect(PosixFile.read("\(fixture.mount.mountPoint)/lists/train/\(name)").map(\.count) != nil)
        }
        #expect(fixture.origin.totalRequests == count + 1)
        #expect(fixture.mount.waitForLog { $0.contains("warmed list train") })
        // stats.json tells how far each list's warm went.
        let data = try #require(FileManager.default.contents(atPath: "\(fixture.mount.mountPoint)/.imgfs/stats.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let warming = try #require((object["warming"] as? [[String: Any]])?.first { $0["name"] as? String == "train" })
        let counters = try #require(warming["counters"] as? [String: Any])
        #expect(counters["fetched"] as? Int == count && counters["entries"] as? Int == count, "\(counters)")
        #expect(counters["ended"] as? Bool == true)
    }

    @Test("list add --warm probes nothing first: one whole GET per entry, the warm's")
    func warmAddsNoProbes() throws {
        let fixture = try ListFixture(delay: 0)
        defer { fixture.stop() }
        let count = 10
        let added = try fixture.add("set", (1...count).map(fixture.url).joined(separator: "\n"), extra: ["--warm"])
        #expect(added.status == 0, "\(added.output)")
        #expect(
            Poll.until(timeout: 30) { Set(Self.listed(fixture, count)).count == count },
            "every entry fetched: \(Self.listed(fixture, count))")
        #expect(fixture.mount.waitForLog { $0.contains("warmed list set") })
        let requests = fixture.origin.requests()
        #expect(requests.count == count, "\(requests.map(\.path))")
        #expect(requests.allSatisfy { $0.header("Range") == nil }, "no probe: \(requests.map { $0.header("Range") })")
    }

    @Test("a reader jumping about a warm list (a shuffled loader) fetches each URL once: read-ahead gives up none")
    func shuffledReaderOneFetchEach() throws {
        let fixture = try ListFixture(delay: 0.2)
        defer { fixture.stop() }
        let count = 40
        #expect(
            try fixture.add(
                "shuffled", (1...count).map(fixture.url).joined(separator: "\n"), extra: ["--warm", "--no-probe"]
            ).status
                == 0)
        let names = try fixture.ls("lists/shuffled")
        try #require(names.count == count)
        // Every open is a jump (more than 2 × read-ahead away from the one before), as in a shuffled epoch.
        for index in (0..<count / 2).flatMap({ [$0, $0 + count / 2] }) {
            let data = PosixFile.read("\(fixture.mount.mountPoint)/lists/shuffled/\(names[index])")
            #expect(data.map(\.count) == .success(fixture.icons[(index + 1) % 8].count))
        }
        Poll.elapse(0.5)
        let paths = Self.listed(fixture, count)
        #expect(paths.count == count && Set(paths).count == count, "one GET per URL: \(paths.sorted())")
    }

    @Test("a list added without --warm is not warmed; adding it again with --warm warms it")
    func onlyMarkedListsWarm() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let text = (1...6).map(fixture.url).joined(separator: "\n")
        #expect(try fixture.add("plain", text, extra: ["--no-probe"]).status == 0)
        _ = try fixture.ls("lists/plain")
        Poll.elapse(1)
        #expect(fixture.origin.totalRequests == 0, "an unmarked list fetches nothing")
        #expect(try fixture.add("plain", text, extra: ["--warm", "--no-probe"]).status == 0)
        #expect(Poll.until { Set(Self.listed(fixture, 6)).count == 6 })
    }

    @Test("removing a warming list stops its warm")
    func removalStops() throws {
        let fixture = try ListFixture(delay: 0.3, mountArguments: ["--tune", "max-transfers-per-host=1"])
        defer { fixture.stop() }
        let count = 40
        #expect(
            try fixture.add(
                "big", (1...count).map(fixture.url).joined(separator: "\n"), extra: ["--warm", "--no-probe"]
            ).status
                == 0)
        #expect(Poll.until { fixture.origin.totalRequests >= 2 })
        let removed = try ChildProcess.run(MountedImgfs.binary, ["list", "rm", fixture.mount.mountPoint, "big"])
        #expect(removed.status == 0, "\(removed.output)")
        let atRemoval = fixture.origin.totalRequests
        // Noticed within half a second; at most the transfer under way and one more may still reach the origin.
        Poll.elapse(1.5)
        let settled = fixture.origin.totalRequests
        #expect(settled <= atRemoval + 3, "\(atRemoval) requests at the removal, \(settled) after")
        Poll.elapse(1.5)
        #expect(fixture.origin.totalRequests == settled, "nothing more after the warm stopped")
        #expect(fixture.mount.waitForLog { $0.contains("warming of list big stopped") })
    }

    @Test("unmounting stops a warm at once; after a remount, opening the list's folder warms the rest")
    func unmountStopsAndRemountResumes() throws {
        let cache = "/tmp/imgfs-warm-cache-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let count = 30
        do {
            let fixture = try ListFixture(
                delay: 0.3, mountArguments: ["--tune", "max-transfers-per-host=1"], cacheDirectory: cache)
            defer { fixture.stop() }
            let text = (1...count).map(fixture.url).joined(separator: "\n")
            #expect(try fixture.add("set", text, extra: ["--warm", "--no-probe"]).status == 0)
            #expect(Poll.until { fixture.origin.totalRequests >= 2 })
            let start = Date()
            #expect(fixture.mount.stop() == 0)
            #expect(Date().timeIntervalSince(start) < 10, "the unmount waited for no warm")
            let atUnmount = fixture.origin.totalRequests
            Poll.elapse(1)
            #expect(fixture.origin.totalRequests == atUnmount)
            #expect(atUnmount < count)
        }
        // The same cache directory (lists and disk cache) on a new mount and a new origin port: its URLs differ, so
        // the list is added again there; what matters is that a lookup of the folder starts the warm.
        let fixture = try ListFixture(cacheDirectory: cache)
        defer { fixture.stop() }
        let text = (1...count).map(fixture.url).joined(separator: "\n")
        #expect(try fixture.add("set", text, extra: ["--warm", "--no-probe"]).status == 0)
        #expect(Poll.until { Set(Self.listed(fixture, count)).count == count })
        fixture.mount.stop()
        let fetched = fixture.origin.totalRequests
        // A third mount over the same cache: the folder's first lookup starts the warm, which finds every entry
        // cached on disk and asks the origin nothing.
        let again = try MountedImgfs(cacheDirectory: cache)
        defer { again.stop() }
        #expect(FileManager.default.fileExists(atPath: "\(again.mountPoint)/lists/set"))
        #expect(again.waitForLog { $0.contains("warmed list set") && $0.contains("cached=\(count)") })
        #expect(fixture.origin.totalRequests == fetched)
    }
}
