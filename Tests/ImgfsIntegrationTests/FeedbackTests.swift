import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 39, item 3: what the commands say matches what happened — `imgfs stats` in words, `imgfs why` under
/// `--policy cache-only`.
@Suite("Feedback", .serialized, .enabled(if: FuseAvailability.available))
struct FeedbackTests {
    @Test("imgfs stats prints a summary in words: hits and misses per tier, transfers, bytes, failures by kind")
    func statsSummary() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/s.png", .ok(icon, contentType: "image/png"))
            for _ in 0..<3 { #expect(PosixFile.read(mount.path(origin.baseURL + "/s.png")) == .success(icon)) }
            #expect(PosixFile.read(mount.path(origin.baseURL + "/gone.png")) == .failure(Errno(ENOENT)))
            let summary = try ChildProcess.run(MountedImgfs.binary, ["stats", "--mount", mount.mountPoint])
            #expect(summary.status == 0, "\(summary.output)")
            let lines = summary.output.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("imgfs on \(mount.mountPoint) (pid ") == true, "\(summary.output)")
            #expect(lines.contains { $0.hasPrefix("memory: ") && $0.contains(" hits, ") && $0.contains(" misses") })
            let held = "1 image, \(Quantity.describe(bytes: icon.count)) of "
            #expect(lines.contains { $0.hasPrefix("memory: ") && $0.contains(held) }, "\(summary.output)")
            #expect(lines.contains { $0.hasPrefix("disk: ") && $0.contains(" hits") }, "\(summary.output)")
            #expect(lines.contains { $0.hasPrefix("transfers: ") && $0.contains(" 2 started") }, "\(summary.output)")
            #expect(lines.contains { $0 == "failures:   1 (http_404 1)" }, "\(summary.output)")
            #expect(!summary.output.contains("{"), "no JSON by default")
            let json = try ChildProcess.run(MountedImgfs.binary, ["stats", "--json", mount.mountPoint])
            #expect(json.status == 0 && json.output.hasPrefix("{") && json.output.contains("\"http_404\" : 1"))
        }
    }

    @Test("under --policy cache-only, imgfs why says an uncached URL is not cached and the network is forbidden")
    func whyUnderCacheOnly() throws {
        try withMountedOrigin(["--policy", "cache-only"]) { origin, mount in
            let url = origin.baseURL + "/never-fetched.png"
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.status == 0, "a reason is known: \(why.output)")
            #expect(
                why.output == "\(url): not cached, and the policy (cache-only) forbids the network\n", "\(why.output)")
            #expect(!why.output.contains("no failure known"))
            #expect(origin.totalRequests == 0, "asking fetched nothing")
        }
    }
}
