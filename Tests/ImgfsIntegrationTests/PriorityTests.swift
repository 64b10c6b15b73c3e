import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 16: `imgfs prefetch` works at background priority; a waiting reader goes first, and joining promotes.
@Suite("Transfer priorities", .serialized, .enabled(if: FuseAvailability.available))
struct PriorityTests {
    @Test("a read waits behind no queued prefetch transfer; a prefetch transfer a reader joins is promoted")
    func prefetchIsBackground() throws {
        // One transfer per host at a time, 0.3 s each: the prefetch batch queues up behind its first transfer.
        let fixture = try ListFixture(delay: 0.3, mountArguments: ["--tune", "max-transfers-per-host=1"])
        defer { fixture.stop() }
        let list = "\(fixture.mount.root)/warm.txt"
        try (1...16).map(fixture.url).joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let prefetch = try ChildProcess.spawn(
            MountedImgfs.binary,
            ["prefetch", "--quiet", "--concurrency", "16", fixture.mount.mountPoint, list])
        defer { prefetch.kill9AndReap() }
        Poll.until { fixture.origin.totalRequests > 0 }
        Poll.elapse(0.1)  // let every prefetch read reach the queue (nothing observable says they have)
        #expect(PosixFile.read(fixture.mount.path(fixture.url(100))).map(\.count) == .success(fixture.icons[4].count))
        var paths = fixture.origin.requests().map(\.path)
        #expect(paths.firstIndex(of: "/v/100.png").map { $0 <= 1 } == true, "the read went next: \(paths)")
        // Join a prefetch transfer still waiting, one of the last the batch queued (its threads take the URLs in
        // list order): without promotion it would wait behind the others.
        let waiting = try #require((1...16).reversed().first { !paths.contains("/v/\($0).png") && $0 != 1 })
        #expect(
            PosixFile.read(fixture.mount.path(fixture.url(waiting))).map(\.count)
                == .success(fixture.icons[waiting % 8].count))
        paths = fixture.origin.requests().map(\.path)
        let joined = try #require(paths.firstIndex(of: "/v/\(waiting).png"))
        #expect(joined <= paths.firstIndex(of: "/v/100.png")! + 2, "the joined transfer was promoted: \(paths)")
        #expect(prefetch.wait(timeout: 30) == 0)
        #expect(fixture.origin.totalRequests == 17, "one GET per URL")
    }
}
