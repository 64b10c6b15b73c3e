import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// The memory bound of docs/SEMANTICS.md ("Thumbnails", Memory), measured on the real daemon: 16 readers of the
/// thumbnails of 16 different 48-megapixel, ~46 MB originals at once.
@Suite("Thumbnail memory", .serialized, .enabled(if: FuseAvailability.available))
struct ThumbnailMemoryTests {
    private static let mebibyte = 1 << 20

    @Test("16 readers of 16 different 48-megapixel originals' thumbnails: peak RSS within the documented bound")
    func sixteenLargeOriginals() throws {
        let images = try ThumbnailImages()
        let origin = try TestOrigin()
        defer { origin.stop() }
        // 8000 x 6000 of noise at quality 98: about 46 MB, a camera original's size and pixel count.
        try images.sh("convert -size 8000x6000 xc:gray +noise Random -quality 98 big.jpg")
        let big = try images.bytes("big.jpg")
        try #require(big.count > 40 * Self.mebibyte && big.count <= 48 * Self.mebibyte, "\(big.count) bytes")
        origin.route(prefix: "/big.jpg") { _ in .ok(big, contentType: "image/jpeg") }
        // Sixteen URLs (query strings), so sixteen cache entries and sixteen variants.
        let urls = (0..<16).map { origin.baseURL + "/big.jpg?n=\($0)" }
        let workers = 2
        let memoryLimit = 64 * Self.mebibyte
        let maxSize = 48 * Self.mebibyte
        let mount = try MountedImgfs(arguments: [
            "--memory-limit", "64M", "--max-size", "48M", "--disk-limit", "2G", "--tune", "thumb-workers=\(workers)"
        ])
        defer { mount.stop() }
        let pid = mount.process.pid
        let program = ProcessStatus.bytes(pid, "VmRSS")
        // The originals are cached first (one in memory at most, the others on disk), as in the benchmark. One at a
        // time: the disk writes queued may hold at most the memory budget, more would not be written.
        for (index, url) in urls.enumerated() {
            #expect(PosixFile.read(mount.path(url)).map(\.count) == .success(big.count))
            #expect(
                mount.waitForStatistics(timeout: 60) { ($0["repository.disk_entries"] ?? 0) >= Double(index + 1) },
                "\(mount.statistics().filter { $0.key.hasPrefix("repository.disk") })")
        }
        // The peak is measured from here: clear_refs 5 resets VmHWM to the current RSS.
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
        let before = ProcessStatus.bytes(pid, "VmRSS")
        let results = ParallelThreads.run(16) { index in
            PosixFile.read(mount.thumbnail(256, urls[index]))
        }
        let peak = ProcessStatus.bytes(pid, "VmHWM")
        for (index, result) in results.enumerated() {
            #expect(result.map { $0.count > 1000 } == .success(true), "reader \(index): \(result.map(\.count))")
        }
        #expect(mount.statistics()["variants.made"] == 16)
        // The documented bound: the program itself, the images' budget, the variants' (an eighth of it), and per
        // worker 3 x --max-size + 4 MiB + libvips's rows (16 MiB allowed here).
        let bound =
            program + memoryLimit + memoryLimit / 8 + workers * (3 * maxSize + 4 * Self.mebibyte)
            + workers * 16 * Self.mebibyte
        print(
            "thumbnail memory: program \(program >> 20) MiB, before \(before >> 20) MiB, peak \(peak >> 20) MiB,"
                + " bound \(bound >> 20) MiB")
        #expect(program > 0 && peak > 0)
        #expect(peak <= bound, "peak RSS \(peak >> 20) MiB over the bound of \(bound >> 20) MiB")
    }
}
