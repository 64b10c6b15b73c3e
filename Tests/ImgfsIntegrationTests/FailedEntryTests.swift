import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 37, item 2: a list with failing entries (HTTP 500, a refused connection, HTML) lists every working entry in
/// every program, a failed entry does not exist in its list while its reason stays with the mount, and a failure of
/// any kind is remembered for `--tune failure-memory`, so repeated stats of a failing URL make one attempt sequence.
@Suite("Failed entries", .serialized, .enabled(if: FuseAvailability.available))
struct FailedEntryTests {
    /// `stat` of `path`: 0, or the errno it failed with.
    private func statErrno(_ path: String) -> Int32 {
        var status = stat()
        return stat(path, &status) == 0 ? 0 : errno
    }

    @Test("gio list -l, ls -l and os.scandir + stat list every working entry of a list with a 500, refused and HTML")
    func listingWithFailures() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gio") else {
            throw Fixtures.Missing(description: "need gio: apt-get install libglib2.0-bin (mount-scripts/install-deps)")
        }
        let fixture = try ListFixture(mountArguments: ["--tune", "retries=1"])
        defer { fixture.stop() }
        let origin = fixture.origin
        let closed = try TestOrigin()
        let closedPort = closed.port
        closed.stop()
        origin.route("/broken.png", .status(500))
        origin.route("/page.png", .ok(Array("<!doctype html><title>x</title>".utf8), contentType: "text/html"))
        let broken = "\(origin.baseURL)/broken.png", page = "\(origin.baseURL)/page.png"
        let urls = [fixture.url(1), broken, "http://127.0.0.1:\(closedPort)/refused.png", page, fixture.url(2)]
        #expect(try fixture.add("mixed", urls.joined(separator: "\n") + "\n", extra: ["--no-probe"]).status == 0)
        let directory = "\(fixture.mount.mountPoint)/lists/mixed"
        let working = ["00001-1.png", "00005-2.png"]
        let failed = ["00002-broken.png", "00003-refused.png", "00004-page.png"]
        #expect(try fixture.ls("lists/mixed") == (working + failed).sorted(), "the listing is the list's")

        let gio = try ChildProcess.run("/usr/bin/gio", ["list", "-l", directory])
        #expect(gio.status == 0, "\(gio.output)")
        #expect(working.allSatisfy { gio.output.contains($0) }, "\(gio.output)")
        #expect(failed.allSatisfy { !gio.output.contains($0) }, "\(gio.output)")

        let ls = try ChildProcess.run("/bin/ls", ["-l", directory])
        let lines = ls.output.split(separator: "\n")
        for (name, icon) in zip(working, [fixture.icons[1], fixture.icons[2]]) {
            let size = " \(icon.count) "
            #expect(
                lines.contains { $0.hasPrefix("-r--r--r--") && $0.contains(size) && $0.hasSuffix(name) }, "\(ls.output)"
            )
        }
        #expect(failed.allSatisfy { ls.output.contains("cannot access '\(directory)/\($0)'") }, "\(ls.output)")

        let script = """
            import os, sys
            for entry in sorted(os.scandir(sys.argv[1]), key=lambda e: e.name):
                try:
                    print(entry.name, entry.stat().st_size)
                except FileNotFoundError:
                    print(entry.name, "gone")
            """
        let python = try ChildProcess.run("/usr/bin/python3", ["-c", script, directory])
        #expect(python.status == 0, "\(python.output)")
        let expected = [
            "00001-1.png \(fixture.icons[1].count)", "00002-broken.png gone", "00003-refused.png gone",
            "00004-page.png gone", "00005-2.png \(fixture.icons[2].count)"
        ]
        #expect(python.output.split(separator: "\n").map(String.init) == expected, "\(python.output)")

        #expect(origin.requestCount("/broken.png") == 2, "one attempt sequence (1 + 1 retry) for three programs")
        #expect(origin.requestCount("/page.png") == 1)
        #expect(statErrno(fixture.mount.path(broken)) == EIO, "under img/ the name keeps its errno")
        let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", fixture.mount.mountPoint, broken, page])
        #expect(why.output.contains("500") && why.output.contains("not an image"), "\(why.output)")
    }

    @Test("20 stats of a URL answering 500 make one attempt sequence; the next one after --tune failure-memory")
    func repeatedStatsOfAFailingURL() throws {
        try withMountedOrigin(["--tune", "retries=2", "--tune", "failure-memory=3s"]) { origin, mount in
            origin.route("/broken.png", .status(500))
            let path = mount.path(origin.baseURL + "/broken.png")
            let start = Date()
            for _ in 0..<20 {
                #expect(statErrno(path) == EIO)
                Thread.sleep(forTimeInterval: 0.05)
            }
            let seconds = Date().timeIntervalSince(start)
            #expect(origin.requestCount("/broken.png") == 3, "1 + 2 retries, not 20 × 3 (in \(seconds) s)")
            Thread.sleep(forTimeInterval: 3.2)
            #expect(statErrno(path) == EIO)
            #expect(origin.requestCount("/broken.png") == 6, "tried again once the memory had passed")
            origin.route("/broken.png", .ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png"))
            #expect(statErrno(path) == EIO, "still remembered")
            Thread.sleep(forTimeInterval: 3.2)
            #expect(statErrno(path) == 0, "the origin recovered: the file is there")
        }
    }

    @Test("the default memory (10 s) outlasts repeated stats, imgfs purge forgets it, --negative-ttl 0 caps it")
    func defaultMemoryAndRetryAtOnce() throws {
        try withMountedOrigin(["--tune", "retries=0"]) { origin, mount in
            origin.route("/page.png", .ok(Array("<html></html>".utf8), contentType: "text/html"))
            let path = mount.path(origin.baseURL + "/page.png")
            #expect(statErrno(path) == EMEDIUMTYPE)
            Thread.sleep(forTimeInterval: 4)
            #expect(statErrno(path) == EMEDIUMTYPE)
            #expect(origin.requestCount("/page.png") == 1, "still remembered after 4 s")
            let purge = try ChildProcess.run(MountedImgfs.binary, ["purge", mount.mountPoint])
            #expect(purge.status == 0, "\(purge.output)")
            #expect(statErrno(path) == EMEDIUMTYPE)
            #expect(origin.requestCount("/page.png") == 2, "imgfs purge: tried again at once")
        }
        try withMountedOrigin(["--tune", "retries=0", "--negative-ttl", "0"]) { origin, mount in
            origin.route("/broken.png", .status(500))
            let path = mount.path(origin.baseURL + "/broken.png")
            #expect(statErrno(path) == EIO)
            Thread.sleep(forTimeInterval: 1.2)
            #expect(statErrno(path) == EIO)
            #expect(origin.requestCount("/broken.png") == 2, "--negative-ttl 0: the next use tries again")
        }
    }
}
