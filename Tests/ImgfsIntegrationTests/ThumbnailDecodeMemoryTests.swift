import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 34, item 5: decode bombs within `--tune max-pixels`. Images of exactly 100 megapixels whose loaders cannot
/// stream (interlaced 16-bit PNG, progressive JPEG) are admitted against the decode budget (the memory budget), not
/// decoded past it; what a big decode frees goes back to the system. The daemon runs in a memory cgroup of the test's
/// own (v1 on this machine, v2 where its memory controller is delegated).
@Suite("Thumbnail decode memory", .serialized, .enabled(if: FuseAvailability.available))
struct ThumbnailDecodeMemoryTests {
    private static let mebibyte = 1 << 20

    /// What `imgfs why` says of `url` and its variants (a failed variant has no file to read attributes from).
    private static func why(_ mount: MountedImgfs, _ url: String) -> String {
        (try? ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url]))?.output ?? ""
    }

    /// Makes (with the vips command) a black image of `width` x `height` with `bands` bands as `name`, saved with the
    /// saver's `options` (`[interlace,bitdepth=16]`) after a cast to `cast` (`ushort`) when given.
    private static func make(
        _ images: ThumbnailImages, _ name: String, _ width: Int, _ height: Int, bands: Int = 4, options: String = "",
        cast: String? = nil
    ) throws {
        let scratch = "black-\(name).v"
        try images.sh("vips black \(scratch) \(width) \(height) --bands \(bands)")
        try images.sh(
            cast.map { "vips cast \(scratch) '\(name)\(options)' \($0)" } ?? "vips copy \(scratch) '\(name)\(options)'")
        try images.sh("rm -f \(scratch)")
    }

    /// Alone and two at once: EFBIG with the reason, no OOM kill, peak RSS within the bound; two that fit are decoded
    /// one at a time.
    @Test(
        "10000 x 10000 interlaced 16-bit PNG and progressive JPEG in a 512 MiB memory cgroup: EFBIG, within the bound",
        .enabled(if: TestMemoryCgroup.isAvailable))
    func bombsInACgroup() throws {
        let images = try ThumbnailImages()
        try Self.make(images, "bomb.png", 10000, 10000, options: "[interlace,bitdepth=16]", cast: "ushort")
        try Self.make(images, "bomb.jpg", 10000, 10000, bands: 3, options: "[interlace,Q=95,subsample-mode=off]")
        try Self.make(images, "bomb.gif", 10000, 10000, bands: 3)
        try Self.make(images, "bomb.avif", 10000, 10000, bands: 3, options: "[compression=av1]")
        // Interlaced too, but 2400 x 2400 x 4 bands x 2 bytes (x 5/4): 55 MiB, within the 64 MiB budget alone.
        try Self.make(images, "fits.png", 2400, 2400, options: "[interlace,bitdepth=16]", cast: "ushort")
        let png = try images.bytes("bomb.png")
        let jpeg = try images.bytes("bomb.jpg")
        let fits = try images.bytes("fits.png")
        #expect(try images.sh("vipsheader bomb.png bomb.jpg").contains("10000x10000 ushort, 4 bands, rgb16"))
        #expect(png.count < 2 * Self.mebibyte && jpeg.count < 2 * Self.mebibyte, "\(png.count), \(jpeg.count)")

        let group = try #require(TestMemoryCgroup.make(limit: 512 * Self.mebibyte))
        // The group can go once the daemon has exited (withMountedOrigin stops it first).
        defer { group.remove() }
        let workers = 2
        let maxSize = 4 * Self.mebibyte
        try withMountedOrigin(["--tune", "thumb-workers=\(workers)", "--max-size", "4M"]) { origin, mount in
            origin.route(prefix: "/bomb.png") { _ in .ok(png, contentType: "image/png") }
            origin.route(prefix: "/bomb.jpg") { _ in .ok(jpeg, contentType: "image/jpeg") }
            for name in ["bomb.gif", "bomb.avif"] { origin.route("/\(name)", .ok(try images.bytes(name))) }
            origin.route(prefix: "/fits.png") { _ in .ok(fits, contentType: "image/png") }
            let pid = mount.process.pid
            #expect(group.add(pid), "the daemon moved into \(group.path)")
            #expect(
                mount.waitForLog { $0.contains("memory cache budget 64.0 MiB (an eighth of the memory cgroup limit)") },
                "the daemon took the cgroup's limit: \(mount.log.suffix(2000))")
            let program = ProcessStatus.bytes(pid, "VmRSS")
            try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
            let bombs = ["/bomb.png", "/bomb.jpg"].map { origin.baseURL + $0 }
            // One at a time, then two at once (other URLs: new productions).
            for url in bombs + bombs.map({ $0 + "?n=2" }) {
                #expect(PosixFile.read(mount.thumbnail(256, url)).map(\.count) == .failure(Errno(EFBIG)), "\(url)")
            }
            let both = ParallelThreads.run(2) { PosixFile.read(mount.thumbnail(256, bombs[$0] + "?n=3")).map(\.count) }
            #expect(both == [.failure(Errno(EFBIG)), .failure(Errno(EFBIG))])
            let reason = Self.why(mount, bombs[0])
            #expect(
                reason.contains(
                    "decode refused: interlaced PNG of 10000 x 10000 pixels needs 953.7 MiB to decode,"
                        + " over the decode budget of 64.0 MiB"), "\(reason)")
            #expect(Self.why(mount, bombs[1]).contains("progressive JPEG of 10000 x 10000"))
            // The other loaders that hold the whole image.
            for (name, what) in [("bomb.gif", "GIF"), ("bomb.avif", "HEIF")] {
                let path = mount.thumbnail(256, origin.baseURL + "/" + name)
                #expect(PosixFile.read(path).map(\.count) == .failure(Errno(EFBIG)), "\(name)")
                let reason = Self.why(mount, origin.baseURL + "/" + name)
                #expect(reason.contains("decode refused: \(what) of 10000 x 10000"), "\(reason)")
            }
            // Two that fit alone, at once: both made, one after the other.
            let two = ParallelThreads.run(2) {
                PosixFile.read(mount.thumbnail(256, origin.baseURL + "/fits.png?\($0)"))
            }
            for result in two {
                let path = try images.write(try result.get(), "made.png")
                #expect(try images.identify(path) == "PNG 256 256")
            }
            let peak = ProcessStatus.bytes(pid, "VmHWM")
            // The documented bound (docs/SEMANTICS.md, Memory): the program, the images' budget and the variants'
            // (an eighth of it), per worker 3 x --max-size + 4 MiB + libvips's rows (16 MiB), and the decode budget
            // (the images' budget again).
            let budget = 64 * Self.mebibyte
            let bound =
                program + budget + budget / 8 + workers * (3 * maxSize + 4 * Self.mebibyte + 16 * Self.mebibyte)
                + budget
            print(
                "decode memory: program \(program >> 20) MiB, peak \(peak >> 20) MiB, bound \(bound >> 20) MiB,"
                    + " cgroup \(group.version) peak usage \((group.peakUsage ?? 0) >> 20) MiB")
            #expect(program > 0 && peak > 0)
            #expect(peak <= bound, "peak RSS \(peak >> 20) MiB over the bound of \(bound >> 20) MiB")
            #expect(mount.process.isRunning, "not OOM-killed")
            #expect(PosixFile.read(mount.path(origin.baseURL + "/fits.png")) == .success(fits), "the mount works")
            #expect(group.oomKills == 0, "the kernel killed nothing in the group")
            // At least one refused production per read (a failure over budget is not remembered: a lookup and the
            // open after it may each make one), and the two that fit made.
            let statistics = mount.statistics()
            #expect((statistics["variants.failures.decode_memory"] ?? 0) >= 8, "\(statistics)")
            #expect(statistics["variants.made"] == 2)
        }
    }

    @Test("a 100-megapixel GIF admitted under --memory-limit 1G: what its decode freed goes back to the system")
    func bigDecodeIsTrimmed() throws {
        let images = try ThumbnailImages()
        try Self.make(images, "big.gif", 10000, 10000, bands: 3)
        let gif = try images.bytes("big.gif")
        try withMountedOrigin(["--memory-limit", "1G"]) { origin, mount in
            origin.route("/big.gif", .ok(gif, contentType: "image/gif"))
            let url = origin.baseURL + "/big.gif"
            #expect(PosixFile.read(mount.path(url)) == .success(gif))
            let pid = mount.process.pid
            let before = ProcessStatus.bytes(pid, "VmRSS")
            try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
            let made = try PosixFile.read(mount.thumbnail(256, url)).get()
            #expect(try images.identify(try images.write(made, "t.jpg"), "%w %h") == "256 256")
            let peak = ProcessStatus.bytes(pid, "VmHWM")
            let after = ProcessStatus.bytes(pid, "VmRSS")
            print("big decode: before \(before >> 20) MiB, peak \(peak >> 20) MiB, after \(after >> 20) MiB")
            #expect(peak - before > 256 * Self.mebibyte, "the decode held the frame (peak \(peak >> 20) MiB)")
            #expect(
                after - before < 32 * Self.mebibyte, "RSS after the decode \(after >> 20) MiB, before \(before >> 20)")
        }
    }
}
