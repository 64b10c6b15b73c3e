import Foundation
import ImgfsTestSupport
import Testing

/// Issue 37, item 4, through the CLI and the mount: CSV, TSV and JSON Lines lists (gzip-compressed, from a file or
/// standard input) with bad rows add the good ones, in order, and name the bad lines.
@Suite("List data sets through the mount", .serialized, .enabled(if: FuseAvailability.available))
struct ListDatasetAddTests {
    @Test("a CSV with a quoted name, a BOM, CRLF and three bad rows: the good rows become entries, bad lines named")
    func csvFile() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let text =
            "\u{FEFF}id,url,name\r\n1,\(fixture.url(1)),\"Cover, big\"\r\n2,,none\r\n3,not-a-url,bad\r\n"
            + "4,\(fixture.url(2)),\r\n5,\"\(fixture.url(3))\r\n"
        let file = "\(fixture.mount.root)/photos.csv"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let run = try ChildProcess.run(
            MountedImgfs.binary, ["list", "add", "--no-probe", fixture.mount.mountPoint, "photos", file])
        #expect(run.status == 1, "bad rows make the exit status 1")
        for line in [3, 4, 6] { #expect(run.output.contains("line \(line):"), "\(run.output)") }
        #expect(run.output.contains("list photos: 2 entries"), "\(run.output)")
        #expect(try fixture.ls("lists/photos") == ["00001-Cover-big.png", "00002-2.png"])
        #expect(
            PosixFile.read("\(fixture.mount.mountPoint)/lists/photos/00001-Cover-big.png") == .success(fixture.icons[1])
        )
    }

    @Test("gzip-compressed JSON Lines from standard input, and a TSV with its URL column named by option")
    func jsonLinesAndTSV() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let jsonl = "{\"url\": \"\(fixture.url(4))\", \"name\": \"four\"}\nnot json\n{\"url\": \"\(fixture.url(5))\"}\n"
        let plain = "\(fixture.mount.root)/rows.jsonl"
        try jsonl.write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(try ChildProcess.run("/bin/gzip", ["-k", plain]).status == 0)
        let run = try ChildProcess.run(
            "/bin/sh",
            [
                "-c", #"exec "$0" list add --no-probe "$1" rows - < "$2""#, MountedImgfs.binary,
                fixture.mount.mountPoint,
                plain + ".gz"
            ])
        #expect(run.output.contains("line 2: not a JSON object"), "\(run.output)")
        #expect(try fixture.ls("lists/rows") == ["00001-four.png", "00002-5.png"])
        let tsv = "title\tlink\nsix\t\(fixture.url(6))\n"
        let tsvFile = "\(fixture.mount.root)/rows.tsv"
        try tsv.write(toFile: tsvFile, atomically: true, encoding: .utf8)
        let missing = try ChildProcess.run(MountedImgfs.binary, ["list", "add", fixture.mount.mountPoint, "t", tsvFile])
        #expect(missing.status == 2 && missing.output.contains("--url-column"), "\(missing.output)")
        let named = try ChildProcess.run(
            MountedImgfs.binary,
            [
                "list", "add", "--no-probe", "--url-column", "link", "--name-column", "title", fixture.mount.mountPoint,
                "t", tsvFile
            ])
        #expect(named.status == 0, "\(named.output)")
        #expect(try fixture.ls("lists/t") == ["00001-six.png"])
    }
}
