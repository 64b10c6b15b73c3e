import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// A large image opened while it still arrives, and open nowhere else, is read past the kernel's page cache
/// (direct_io): each byte goes once from imgfs into the reader's buffer. Proven by rereading through the same
/// descriptor while the daemon is stopped (SIGSTOP): a page-cache open finishes from the kernel's pages, a direct one
/// waits for imgfs.
@Suite("Direct reads of images still arriving", .serialized, .enabled(if: FuseAvailability.available))
struct DirectColdReadTests {
    /// A slow origin: the image takes about `seconds` to arrive, so the test's open finds it arriving.
    static func slowly(_ image: [UInt8], seconds: Double) -> OriginResponse {
        var response = OriginResponse.ok(image, contentType: "image/jpeg")
        response.bytesPerSecond = Int(Double(image.count) / seconds)
        return response
    }

    @Test("an image still arriving reads whole in 4 KiB reads, from imgfs even on a reread; later opens by passthrough")
    func arrivingImageBypassesThePageCache() throws {
        let image = try Fixtures.largeJPEG()
        #expect(image.count > 1 << 20)
        try withMountedOrigin { origin, mount in
            origin.route("/slow.jpg", Self.slowly(image, seconds: 1))
            let path = mount.path(origin.baseURL + "/slow.jpg")
            do {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                try #require(descriptor >= 0, "open: \(Errno(errno))")
                defer { close(descriptor) }
                #expect(
                    Fixtures.digest(PosixFile.readAll(descriptor, readSize: 4096)) == Fixtures.digest(.success(image)))
                let reread = mount.readWhileStopped(descriptor, seconds: 1.5)
                #expect(!reread.finishedStopped, "the open's reads come from imgfs, not from the kernel's pages")
                #expect(Fixtures.digest(reread.result) == Fixtures.digest(.success(image)))
            }
            // The kernel sends RELEASE in the background after close; an open that overtook it would stay with the
            // page cache (as next to any open file of the image).
            Thread.sleep(forTimeInterval: 0.3)
            // The image is whole now: a new open is served by the kernel from imgfs's file, without the daemon.
            let later = open(path, O_RDONLY | O_CLOEXEC)
            try #require(later >= 0)
            defer { close(later) }
            let passthrough = mount.readWhileStopped(later, seconds: 10)
            #expect(passthrough.finishedStopped, "a later open reads without the daemon (passthrough)")
            #expect(Fixtures.digest(passthrough.result) == Fixtures.digest(.success(image)))
            #expect(origin.requestCount("/slow.jpg") == 1)
        }
    }

    @Test("an image still arriving can be mapped shared, and the mapping holds its bytes")
    func arrivingImageMapsShared() throws {
        let image = try Fixtures.largePNG()
        try withMountedOrigin { origin, mount in
            var response = Self.slowly(image, seconds: 1)
            response.headers = [("Content-Type", "image/png")]
            origin.route("/slow.png", response)
            let path = mount.path(origin.baseURL + "/slow.png")
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0, "open: \(Errno(errno))")
            defer { close(descriptor) }
            let address = mmap(nil, image.count, PROT_READ, MAP_SHARED, descriptor, 0)
            try #require(address != nil && address != MAP_FAILED, "mmap: \(Errno(errno))")
            defer { munmap(address, image.count) }
            let mapped = [UInt8](UnsafeRawBufferPointer(start: address, count: image.count))
            #expect(Fixtures.sha256(mapped) == Fixtures.sha256(image))
        }
    }

    @Test("with --tune direct-cold-reads=off the reads of an image still arriving fill the page cache")
    func pageCacheWhenAskedFor() throws {
        let image = try Fixtures.largeJPEG()
        try withMountedOrigin(["--tune", "direct-cold-reads=off"]) { origin, mount in
            origin.route("/slow.jpg", Self.slowly(image, seconds: 1))
            let path = mount.path(origin.baseURL + "/slow.jpg")
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0, "open: \(Errno(errno))")
            defer { close(descriptor) }
            #expect(Fixtures.digest(PosixFile.readAll(descriptor, readSize: 4096)) == Fixtures.digest(.success(image)))
            let reread = mount.readWhileStopped(descriptor, seconds: 10)
            #expect(reread.finishedStopped, "the reread came from the kernel's pages")
            #expect(Fixtures.digest(reread.result) == Fixtures.digest(.success(image)))
        }
    }
    @Test("hundreds of small reads of an image still arriving join its transfer no more often than it was opened")
    func readsAreNoCallers() throws {
        let image = try Fixtures.largeJPEG()
        try withMountedOrigin { origin, mount in
            origin.route("/slow.jpg", Self.slowly(image, seconds: 1))
            let path = mount.path(origin.baseURL + "/slow.jpg")
            let opens = 2
            let descriptors = (0..<opens).map { _ in open(path, O_RDONLY | O_CLOEXEC) }
            defer { descriptors.forEach { close($0) } }
            try #require(descriptors.allSatisfy { $0 >= 0 }, "open: \(Errno(errno))")
            #expect(
                Fixtures.digest(PosixFile.readAll(descriptors[0], readSize: 4096)) == Fixtures.digest(.success(image)))
            let statistics = mount.statistics()
            let joined = try #require(statistics["repository.counters.joined"], "\(statistics)")
            #expect(joined <= Double(opens), "a read is no new caller of the transfer: \(statistics)")
            #expect(origin.requestCount("/slow.jpg") == 1)
        }
    }
}
