import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 14, item 7, through a real mount: one GET per URL under a small memory budget, also for a body that left
/// memory while its disk write was still queued.
@Suite("One fetch per URL", .serialized, .enabled(if: FuseAvailability.available))
struct OneFetchTests {
    @Test("many readers over many URLs with --memory-limit 64K: every URL fetched once, every byte right")
    func oneFetchUnderSmallBudget() throws {
        let images = try Fixtures.smallPNGs(300)
        try withMountedOrigin(["--memory-limit", "64K"]) { origin, mount in
            for (index, body) in images.enumerated() {
                origin.route("/icon\(index).png", .ok(body, contentType: "image/png"))
            }
            let readers = 6
            let wrong = Locked<[String]>([])
            // Each pass reads every URL under another fragment: another name (another inode, nothing in the kernel's
            // page cache) for the same download, so the daemon is asked again while the disk writes of the first pass
            // wait.
            for pass in 1...3 {
                let done = DispatchSemaphore(value: 0)
                for reader in 0..<readers {
                    Thread.detachNewThread {
                        for step in 0..<images.count {
                            let index = (step + reader * images.count / readers) % images.count
                            let path = mount.path(origin.baseURL + "/icon\(index).png#\(pass)")
                            if PosixFile.read(path) != .success(images[index]) { wrong.withLock { $0.append(path) } }
                        }
                        done.signal()
                    }
                }
                for _ in 0..<readers { #expect(done.wait(timeout: .now() + 120) == .success) }
            }
            #expect(wrong.withLock { $0 }.isEmpty, "every byte right")
            let twice = (0..<images.count).filter { origin.requestCount("/icon\($0).png") != 1 }
            #expect(twice.isEmpty, "fetched more than once: \(twice.map { "icon\($0).png" })")
        }
    }
}
