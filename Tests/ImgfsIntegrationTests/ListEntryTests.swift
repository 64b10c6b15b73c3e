import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 16: what a list entry is named from, and that it fails as its `img/` name does.
@Suite("List entries", .serialized, .enabled(if: FuseAvailability.available))
struct ListEntryTests {
    @Test("list add reads stdin; a cached URL without an extension is named from its known type (also --no-probe)")
    func knownTypeFromStandardInput() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let known = "\(fixture.origin.baseURL)/raw/known"
        fixture.origin.route("/raw/known", .ok(fixture.icons[4], contentType: "image/png"))
        #expect(PosixFile.read(fixture.mount.path(known)) == .success(fixture.icons[4]))
        #expect(fixture.origin.totalRequests == 1)
        let file = "\(fixture.mount.root)/stdin.txt"
        try "\(known)\n\(fixture.url(2))\n".write(toFile: file, atomically: true, encoding: .utf8)
        let run = try ChildProcess.run(
            "/bin/sh", ["-c", "'\(MountedImgfs.binary)' list add '\(fixture.mount.mountPoint)' piped - < '\(file)'"])
        #expect(run.status == 0 && run.output == "list piped: 2 entries\n", "\(run.output)")
        #expect(try fixture.ls("lists/piped") == ["00001-known.png", "00002-2.png"])
        #expect(fixture.origin.totalRequests == 2, "the cached type was used; the one entry not cached was probed")
        // --no-probe skips the probe only: a cached type still names the entry, an unknown one gets no extension.
        let unknown = "\(fixture.origin.baseURL)/raw/unknown"
        #expect(try fixture.add("unprobed", "\(known)\n\(unknown)\n", extra: ["--no-probe"]).status == 0)
        #expect(try fixture.ls("lists/unprobed") == ["00001-known.png", "00002-unknown"])
        #expect(fixture.origin.totalRequests == 2, "--no-probe requested nothing")
    }

    @Test("an entry whose URL fails fails as img/<encoded-url> does (errno, imgfs why); opens count their bytes")
    func failingEntryAndBytes() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let gone = "\(fixture.origin.baseURL)/gone.png"
        fixture.origin.route("/gone.png", .status(404))
        #expect(try fixture.add("mixed", "\(fixture.url(1))\n\(gone)\n", extra: ["--no-probe"]).status == 0)
        let directory = "\(fixture.mount.mountPoint)/lists/mixed"
        #expect(try fixture.ls("lists/mixed") == ["00001-1.png", "00002-gone.png"], "ls fetched nothing")
        #expect(fixture.origin.totalRequests == 0)
        #expect(PosixFile.read("\(directory)/00002-gone.png") == .failure(Errno(ENOENT)), "a 404 does not exist")
        #expect(PosixFile.read(fixture.mount.path(gone)) == .failure(Errno(ENOENT)), "nor does its img/ name")
        #expect(fixture.origin.requestCount("/gone.png") == 1, "one transfer for both names (the failure is kept)")
        let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", fixture.mount.mountPoint, gone])
        #expect(why.output.contains("404"), "\(why.output)")
        #expect(PosixFile.read("\(directory)/00001-1.png") == .success(fixture.icons[1]))
        // The list's counters are updated off the open's thread (with the read-ahead), just after it.
        Poll.until(timeout: 5) { fixture.counters("mixed")["opens"] == 1 }
        let counters = fixture.counters("mixed")
        #expect(counters["opens"] == 1 && counters["bytes"] == fixture.icons[1].count, "\(counters)")
    }
}
