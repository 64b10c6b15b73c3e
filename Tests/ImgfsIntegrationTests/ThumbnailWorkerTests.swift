import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 34, item 4: thumbnail workers never wait for the network. A variant goes to a worker only once its original
/// is complete; the waiting happens outside the pool.
@Suite("Thumbnail workers", .serialized, .enabled(if: FuseAvailability.available))
struct ThumbnailWorkerTests {
    @Test("4 originals trickling for 20 s with 2 workers: the thumbnail of a small fast original comes in seconds")
    func slowOriginalsLeaveTheWorkersFree() throws {
        let images = try ThumbnailImages()
        try images.sh("convert -size 300x200 xc:gray +noise Random -quality 90 slow.jpg")
        try images.sh("convert -size 40x30 xc:navy small.png")
        let slow = try images.bytes("slow.jpg")
        let small = try images.bytes("small.png")
        #expect(small.count < 2048, "a small original: \(small.count) bytes")
        let trickle = 20.0
        try withMountedOrigin(["--tune", "thumb-workers=2"]) { origin, mount in
            // Each slow original takes `trickle` seconds to arrive (above the 1 KiB/s of the stall timeout).
            origin.route(prefix: "/slow") { _ in
                OriginResponse(
                    headers: [("Content-Type", "image/jpeg")], body: slow,
                    bytesPerSecond: max(2048, Int(Double(slow.count) / trickle)))
            }
            origin.route("/small.png", .ok(small, contentType: "image/png"))
            let slowURLs = (0..<4).map { origin.baseURL + "/slow\($0).jpg" }
            let finished = Locked<[Int: Result<[UInt8], Errno>]>([:])
            let readers = DispatchGroup()
            for (index, url) in slowURLs.enumerated() {
                readers.enter()
                Thread.detachNewThread {
                    let result = PosixFile.read(mount.thumbnail(256, url))
                    finished.withLock { $0[index] = result }
                    readers.leave()
                }
            }
            defer { _ = readers.wait(timeout: .now() + 120) }
            // Every slow original is arriving, past its first KiB (checked to be an image, so its size is known and
            // its variant goes on towards a worker), before the small one is asked for.
            let underWay = Poll.until(timeout: 10) {
                slowURLs.indices.allSatisfy { origin.bodyBytesSent("/slow\($0).jpg") >= 4096 }
            }
            #expect(underWay, "all four slow originals arriving")
            let start = Date()
            let result = PosixFile.read(mount.thumbnail(256, origin.baseURL + "/small.png"))
            let elapsed = Date().timeIntervalSince(start)
            #expect(result.map { $0.count > 100 } == .success(true), "the small thumbnail: \(result.map(\.count))")
            #expect(elapsed < 4, "the small thumbnail took \(elapsed) s behind the slow originals")
            #expect(finished.withLock { $0.isEmpty }, "the slow originals were still arriving")
            #expect(readers.wait(timeout: .now() + 120) == .success, "the slow thumbnails came")
            for index in slowURLs.indices {
                let made = finished.withLock { $0[index] }
                let path = try images.write((try made?.get()) ?? [], "slow\(index).jpg")
                #expect(try images.identify(path) == "JPEG 256 171", "slow thumbnail \(index)")
            }
            #expect(mount.statistics()["variants.made"] == 5)
        }
    }
}
