import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 16: URL lists as folders, through the real mount.
@Suite("Lists", .serialized, .enabled(if: FuseAvailability.available))
struct ListTests {
    @Test("list add: readable names in list order, invalid lines reported by number, ls touches no network, same image")
    func addAndBrowse() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let origin = fixture.origin
        let jpeg = try Fixtures.mediumJPEG()
        origin.route("/photos/green%20photo.jpg", .ok(jpeg, contentType: "image/jpeg"))
        origin.route("/raw/thing", .ok(fixture.icons[1], contentType: "image/png"))
        let text = """
            # my photos
            \(origin.baseURL)/photos/green%20photo.jpg
            not a url
            \(origin.baseURL)/raw/thing
            \(fixture.url(3))\tCover Image
            ftp://example.com/x.png
            \(fixture.url(3))

            """
        let added = try fixture.add("holiday", text)
        #expect(added.status == 1, "invalid lines make the exit status 1: \(added.output)")
        #expect(added.output.contains("line 3: "), "\(added.output)")
        #expect(added.output.contains("line 6: "), "\(added.output)")
        #expect(added.output.contains("list holiday: 4 entries"), "\(added.output)")
        let probes = origin.totalRequests
        #expect(probes == 3, "every URL was probed once (a duplicate once)")

        let names = try fixture.ls("lists/holiday")
        #expect(names == ["00001-green-photo.jpg", "00002-thing.png", "00003-Cover-Image.png", "00004-3.png"])
        #expect(try fixture.ls("lists") == ["holiday"])
        let listed = try ChildProcess.run("/bin/ls", ["-l", "\(fixture.mount.mountPoint)/lists/holiday"])
        #expect(listed.status == 0, "\(listed.output)")
        #expect(origin.totalRequests <= probes + 2, "ls -l waits for headers of what is not known (at most 2 here)")

        let entry = "\(fixture.mount.mountPoint)/lists/holiday/00001-green-photo.jpg"
        #expect(PosixFile.read(entry) == .success(jpeg))
        let plain = fixture.mount.path("\(origin.baseURL)/photos/green%20photo.jpg")
        #expect(PosixFile.read(plain) == .success(jpeg))
        #expect(
            origin.requestCount("/photos/green%20photo.jpg") == 2, "list add's probe, then the rest for both names")
        var a = stat(), b = stat()
        #expect(stat(entry, &a) == 0 && stat(plain, &b) == 0)
        #expect(a.st_ino == b.st_ino, "the entry is the same file as img/<encoded-url>")
        let xattr = try ChildProcess.run(
            "/usr/bin/getfattr", ["--absolute-names", "-n", "user.imgfs.url", "--only-values", entry])
        #expect(xattr.output == "\(origin.baseURL)/photos/green%20photo.jpg")
    }

    @Test("bad list names are refused with one line and exit 2; an empty list is an empty folder; rm and ls")
    func namesEmptyAndRemoval() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        for bad in ["a/b", "..", ".hidden", String(repeating: "x", count: 201)] {
            let run = try fixture.add(bad, "\(fixture.url(1))\n")
            #expect(run.status == 2, "\(bad.prefix(20)): \(run.output)")
            #expect(run.output.split(separator: "\n").count == 1, "\(run.output)")
            #expect(run.output.hasPrefix("imgfs list add: a list name"), "\(run.output)")
        }
        #expect(try fixture.add("empty", "# nothing\n").status == 0)
        #expect(try fixture.ls("lists/empty") == [])
        #expect(try fixture.add("two", "\(fixture.url(1))\n\(fixture.url(2))\n", extra: ["--no-probe"]).status == 0)
        let shown = try ChildProcess.run(MountedImgfs.binary, ["list", "ls", fixture.mount.mountPoint])
        #expect(shown.output == "empty\t0\ntwo\t2\n")
        #expect(try ChildProcess.run(MountedImgfs.binary, ["list", "rm", fixture.mount.mountPoint, "two"]).status == 0)
        #expect(try fixture.ls("lists") == ["empty"])
        // `list add` looked the folder up; the kernel keeps that name for at most a second (stat of a folder fetches
        // nothing).
        let removed = "\(fixture.mount.mountPoint)/lists/two"
        Poll.until(timeout: 5, interval: 0.05) { PosixFile.size(removed) == .failure(Errno(ENOENT)) }
        #expect(PosixFile.size(removed) == .failure(Errno(ENOENT)))
        #expect(PosixFile.size("\(removed)/00001-1.png") == .failure(Errno(ENOENT)))
        #expect(fixture.origin.totalRequests == 0)
    }

    @Test("a list of 100,000 URLs: added, listed in order and opened without fetching anything else")
    func hundredThousand() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let urls = (1...100_000).map { "\(fixture.origin.baseURL)/v/\($0).png" }
        let start = Date()
        let added = try fixture.add("huge", urls.joined(separator: "\n"), extra: ["--no-probe"])
        #expect(added.status == 0, "\(added.output)")
        let names = try fixture.ls("lists/huge")
        let elapsed = Date().timeIntervalSince(start)
        #expect(names.count == 100_000 && names.first == "000001-1.png" && names.last == "100000-100000.png")
        #expect(names == names.sorted(), "names sort in list order")
        #expect(elapsed < 30, "adding and listing took \(elapsed) s")
        #expect(
            PosixFile.read("\(fixture.mount.mountPoint)/lists/huge/054321-54321.png")
                == .success(fixture.icons[54321 % 8]))
        #expect(fixture.origin.totalRequests <= 1 + 8, "the opened image and its read-ahead only")
    }

    @Test("lists survive a restart; a list edited while browsed keeps the names of the entries that stay")
    func restartAndEdit() throws {
        let cache = "/tmp/imgfs-list-cache-\(getpid())-\(UUID().uuidString.prefix(6))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        var fixture = try ListFixture(cacheDirectory: cache)
        let urls = (1...5).map(fixture.url)
        #expect(try fixture.add("five", urls.joined(separator: "\n")).status == 0)
        let before = try fixture.ls("lists/five")
        #expect(before.count == 5)
        let browsing = try #require(opendir("\(fixture.mount.mountPoint)/lists/five"))
        let edited = [fixture.url(9)] + urls.filter { $0 != fixture.url(2) }
        #expect(try fixture.add("five", edited.joined(separator: "\n")).status == 0)
        var seen: [String] = []
        while let entry = readdir(browsing) {
            seen.append(
                withUnsafePointer(to: entry.pointee.d_name) {
                    String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
                })
        }
        closedir(browsing)
        #expect(seen.count == 7, "the open listing is the old snapshot: \(seen)")
        let after = try fixture.ls("lists/five")
        #expect(Set(before).subtracting(after) == ["00002-2.png"])
        #expect(Set(after).subtracting(before).count == 1)
        fixture.stop()
        fixture = try ListFixture(cacheDirectory: cache)
        defer { fixture.stop() }
        #expect(try fixture.ls("lists/five") == after, "the list is back after a restart")
    }
}

/// Read-ahead and priorities through the real mount.
@Suite("List read-ahead", .serialized, .enabled(if: FuseAvailability.available))
struct ListReadAheadTests {
    /// Opens entries `range` of `list` one after another, reading each whole; each image stays on screen for
    /// `viewing` seconds once read (the simulated viewer's display time). Returns, for each open, whether it found
    /// its image cached (the mount's own answer: the host's `hits` counter in `stats.json`, counted when the entry is
    /// looked up and opened, read after the open; reading it fetches nothing) and whether the whole image was read.
    static func step(
        _ fixture: ListFixture, list: String, names: [String], _ range: ClosedRange<Int>,
        viewing: Double = 0
    ) -> [(hit: Bool, read: Bool)] {
        var hits = fixture.hostCounters()["hits"] ?? 0
        return range.map { index in
            let path = "\(fixture.mount.mountPoint)/lists/\(list)/\(names[index - 1])"
            let read = (try? PosixFile.read(path).get())?.isEmpty == false
            let start = Date()
            let now = fixture.hostCounters()["hits"] ?? 0
            defer { hits = now }
            if viewing > 0 { Poll.elapse(max(0, viewing - Date().timeIntervalSince(start))) }
            return (now == hits + 1, read)
        }
    }

    /// The simulated viewer's run: each open's outcome, the origin's GETs, the list's counters.
    typealias Stepping = (steps: [(hit: Bool, read: Bool)], gets: Int, counters: [String: Int])

    static func stepping(readAhead: Int) throws -> Stepping {
        let fixture = try ListFixture(delay: 0.02, mountArguments: ["--tune", "read-ahead=\(readAhead)"])
        defer { fixture.stop() }
        let urls = (1...500).map(fixture.url)
        #expect(try fixture.add("viewer", urls.joined(separator: "\n"), extra: ["--no-probe"]).status == 0)
        let names = try fixture.ls("lists/viewer")
        #expect(names.count == 500 && fixture.origin.totalRequests == 0, "adding and listing fetched nothing")
        let steps = step(fixture, list: "viewer", names: names, 1...30, viewing: 0.03)
        _ = fixture.mount.waitForStatistics(timeout: 5) { $0["repository.in_flight"] == 0 }
        return (steps, fixture.origin.totalRequests, fixture.counters("viewer"))
    }

    @Test("a viewer stepping through 30 of 500 entries at 20 ms: from the third on each open finds its image cached")
    func steppingViewer() throws {
        // What "finds its image cached" means, without a clock: the mount counts each open from the third on as a hit
        // (its image was in memory or on disk when the entry was looked up), and the list's counters agree. How fast
        // such an open is (the issue's 1 ms) is measured in release mode by the benchmark's stepping-viewer rows
        // (`benchmark/bench --lists`: median and p90 time to first byte of images 3..30).
        let (steps, gets, counters) = try Self.stepping(readAhead: 8)
        #expect(gets <= 30 + 8, "\(gets) GETs")
        #expect(steps.allSatisfy { $0.read }, "every image was read")
        let hits = steps.map { $0.hit ? "hit" : "miss" }
        #expect(steps.dropFirst(2).allSatisfy { $0.hit }, "each open from the third found its image cached: \(hits)")
        #expect(counters["used"] ?? 0 >= 25 && counters["opens"] == 30, "\(counters)")
        #expect(counters["hits"] ?? 0 >= 28, "\(counters)")

        let (plain, plainGets, plainCounters) = try Self.stepping(readAhead: 0)
        #expect(plainGets == 30)
        #expect(plain.allSatisfy { !$0.hit && $0.read }, "without read-ahead every open waits for the origin")
        #expect(plainCounters["hits"] == 0 && plainCounters["misses"] == 30, "\(plainCounters)")
    }

    @Test("a reader jumping about a list whose images do not stay cached: 6,000 opens, and the daemon stays up")
    func jumpingReaderKeepsTheDaemonUp() throws {
        // Every open is a jump (81 entries back), so the read-ahead behind the one before is given up, and the memory
        // cache is too small to keep the icons: each open asks the open-handle count about what it gives up. When every
        // call of that count left the next one deeper in the stack, the daemon crashed after about 4,500 such opens.
        let fixture = try ListFixture(mountArguments: ["--memory-limit", "1M", "--disk-limit", "0"])
        defer { fixture.stop() }
        let urls = (1...5_000).map(fixture.url)
        #expect(try fixture.add("jumps", urls.joined(separator: "\n"), extra: ["--no-probe"]).status == 0)
        let names = try fixture.ls("lists/jumps")
        try #require(names.count == 5_000)
        var opened = 0
        for step in 0..<6_000 {
            let path = "\(fixture.mount.mountPoint)/lists/jumps/\(names[(step * 4_919) % names.count])"
            guard (try? PosixFile.read(path).get())?.isEmpty == false else { break }
            opened += 1
        }
        #expect(opened == 6_000 && fixture.mount.process.isRunning, "\(fixture.mount.log.suffix(1_500))")
        #expect(fixture.counters("jumps")["wasted"] ?? 0 > 1_000, "\(fixture.counters("jumps"))")
    }

    @Test("a jump far away cancels the read-ahead nobody asked for; the jumped-to entry loads first")
    func jumpCancels() throws {
        // One transfer per host at a time and a slow origin: read-ahead queues up behind the first image.
        let fixture = try ListFixture(delay: 0.3, mountArguments: ["--tune", "max-transfers-per-host=1"])
        defer { fixture.stop() }
        let urls = (1...500).map(fixture.url)
        #expect(try fixture.add("jump", urls.joined(separator: "\n"), extra: ["--no-probe"]).status == 0)
        let names = try fixture.ls("lists/jump")
        _ = Self.step(fixture, list: "jump", names: names, 1...1)
        _ = Self.step(fixture, list: "jump", names: names, 300...300)
        let paths = fixture.origin.requests().map(\.path)
        #expect(
            paths.prefix(2) == ["/v/1.png", "/v/2.png"] || paths.prefix(2) == ["/v/1.png", "/v/300.png"],
            "\(paths)")
        #expect(paths.firstIndex(of: "/v/300.png").map { $0 <= 2 } == true, "the waited-for image went first: \(paths)")
        _ = fixture.mount.waitForStatistics(timeout: 10) { $0["repository.in_flight"] == 0 }
        let requested = Set(fixture.origin.requests().map(\.path))
        let aheadOfFirst = (2...9).filter { requested.contains("/v/\($0).png") }
        // Without cancellation all 8 are fetched; with it, the one running at the jump (and, on a loaded machine, one
        // or two that ran before the jump was seen).
        #expect(aheadOfFirst.count <= 4, "read-ahead of entries 2...9 was called off: \(aheadOfFirst)")
        #expect(fixture.counters("jump")["wasted"] == 8, "\(fixture.counters("jump"))")
        // Calling off read-ahead is normal operation: a debug line, neither a warning nor a failure.
        let lines = fixture.mount.log.split(separator: "\n")
        #expect(!lines.contains { $0.contains(" warning ") && $0.contains("cancelled") }, "\(fixture.mount.log)")
        #expect(lines.contains { $0.contains(" debug ") && $0.contains("transfer called off") })
        let statistics = fixture.mount.statistics()
        #expect(statistics["repository.counters.failures"] == 0)
        #expect(statistics["repository.counters.cancelled"] ?? 0 >= 1)
        let metrics = (try? String(contentsOfFile: "\(fixture.mount.mountPoint)/.imgfs/metrics", encoding: .utf8)) ?? ""
        #expect(metrics.contains("imgfs_list_read_ahead_wasted_total{list=\"jump\"} 8\n"), "\(metrics.suffix(800))")
        #expect(metrics.contains("imgfs_host_opens_total{host=\"127.0.0.1:\(fixture.origin.port)\"} 2\n"))
    }
}

/// `hosts/`: the cached images of each host, read-only.
@Suite("Host folders", .serialized, .enabled(if: FuseAvailability.available))
struct HostFolderTests {
    @Test("hosts/ lists the hosts of cached images; hosts/<host>/ their images under readable names, same files")
    func hosts() throws {
        let fixture = try ListFixture(delay: 0.2)
        defer { fixture.stop() }
        let origin = fixture.origin
        var slow = OriginResponse.ok(fixture.icons[5], contentType: "image/png")
        slow.headerDelay = 0.2
        origin.route("/raw/blob", slow)
        #expect(try fixture.ls("hosts") == [])
        let blob = "\(origin.baseURL)/raw/blob"
        #expect(PosixFile.read(fixture.mount.path(blob)) == .success(fixture.icons[5]))
        #expect(PosixFile.read(fixture.mount.path(fixture.url(3))) == .success(fixture.icons[3]))
        let host = "127.0.0.1:\(origin.port)"
        #expect(try fixture.ls("hosts") == [host])
        let names = try fixture.ls("hosts/\(host)")
        let blobKey = try ImageURL(blob).cacheKey.prefix(12), iconKey = try ImageURL(fixture.url(3)).cacheKey.prefix(12)
        #expect(names == ["3-\(iconKey).png", "blob-\(blobKey).png"].sorted(), "\(names)")
        let entry = "\(fixture.mount.mountPoint)/hosts/\(host)/blob-\(blobKey).png"
        #expect(PosixFile.read(entry) == .success(fixture.icons[5]))
        var a = stat(), b = stat()
        #expect(stat(entry, &a) == 0 && stat(fixture.mount.path(blob), &b) == 0 && a.st_ino == b.st_ino)
        #expect(origin.totalRequests == 2, "browsing hosts/ fetched nothing")
        #expect(PosixFile.openError(entry, flags: O_WRONLY) == EROFS)
        let data = try #require(FileManager.default.contents(atPath: "\(fixture.mount.mountPoint)/.imgfs/stats.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let hosts = try #require(object["hosts"] as? [[String: Any]])
        let counters = try #require(hosts.first { $0["host"] as? String == host }?["counters"] as? [String: Int])
        #expect(
            counters["opens"] == 3 && counters["misses"] == 2 && counters["hits"] == 1, "a miss waited: \(counters)")
    }
}
