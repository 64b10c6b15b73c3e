import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Large images the kernel reads by itself (FUSE passthrough from imgfs's shared-memory files) once it no longer caches
/// their pages: proven by reading while the daemon is stopped (SIGSTOP), which a read served by imgfs could not finish.
@Suite("Passthrough", .serialized, .enabled(if: FuseAvailability.available))
struct PassthroughTests {
    /// A file open for reading, closed when dropped.
    final class OpenFile {
        let descriptor: Int32

        init(_ path: String) throws {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            if descriptor < 0 { throw Errno(errno) }
        }

        deinit { close(descriptor) }

        /// Everything from offset 0, or the errno.
        func readAll() -> Result<[UInt8], Errno> { PosixFile.readAll(descriptor) }

        /// The file's bytes through a shared read-only mapping (as image viewers read), or nil when mmap failed.
        func mapped(count: Int) -> [UInt8]? {
            guard let address = mmap(nil, count, PROT_READ, MAP_SHARED, descriptor, 0), address != MAP_FAILED else {
                return nil
            }
            defer { munmap(address, count) }
            return [UInt8](UnsafeRawBufferPointer(start: address, count: count))
        }

        /// Drops the kernel's cached pages of the file (what memory pressure or drop_caches would do).
        func dropCachedPages() {
            posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
        }
    }

    /// Reads `file` whole while the daemon is stopped: nil when that did not finish within 10 s (the read waited for
    /// imgfs); the daemon always runs again afterwards.
    func readWhileStopped(_ file: OpenFile, _ mount: MountedImgfs) -> Result<[UInt8], Errno>? {
        let read = mount.readWhileStopped(file.descriptor, seconds: 10)
        return read.finishedStopped ? read.result : nil
    }

    /// Reads the image once (the kernel caches it) and drops the kernel's pages, so the next open finds none.
    private func readAndForget(_ path: String, expecting image: [UInt8]) throws {
        #expect(Fixtures.digest(PosixFile.read(path)) == Fixtures.digest(.success(image)))
        try OpenFile(path).dropCachedPages()
        releaseReachesImgfs()
    }

    /// close returns before the kernel's RELEASE of the file reaches imgfs (the kernel sends it in the background);
    /// an open that overtook it would still count the closed file and stay with the page cache. Nothing outside imgfs
    /// shows that a RELEASE was handled (no counter of open files in stats.json, and the kernel's `waiting` count
    /// leaves background requests out), so this is the one fixed wait of these tests.
    private func releaseReachesImgfs() {
        Thread.sleep(forTimeInterval: 0.3)
    }

    /// The memory is a file of imgfs's own tmpfs (256 KiB pages, or 2 MiB with `--tune pages=huge`), a memfd with
    /// `--tune pages=small`.
    @Test(
        "an image the kernel no longer caches is read by the kernel from imgfs's memory, also with imgfs stopped",
        arguments: [[], ["--tune", "pages=huge"], ["--tune", "pages=small"]])
    func readsWithoutTheDaemon(options: [String]) throws {
        let image = try Fixtures.largeJPEG()
        #expect(image.count > 1 << 20)
        try withMountedOrigin(options) { origin, mount in
            origin.route("/big.jpg", .ok(image, contentType: "image/jpeg"))
            let path = mount.path(origin.baseURL + "/big.jpg")
            try readAndForget(path, expecting: image)
            #expect(mount.log.contains("passthrough: the kernel reads images kept whole in memory by itself"))
            #expect(!mount.log.contains("large image bodies go to memfds"), "the tmpfs was made where asked for")
            let maps = try String(contentsOfFile: "/proc/\(mount.process.pid)/maps", encoding: .utf8)
            #expect(
                maps.contains("/memfd:imgfs-image") == (options == ["--tune", "pages=small"]),
                "the body is in a memfd exactly with --tune pages=small")
            do {  // the files are closed before the unmount
                let file = try OpenFile(path)
                let second = try OpenFile(path)  // a second open of a passthrough file must share its backing file
                #expect(
                    Fixtures.digest(readWhileStopped(file, mount)) == Fixtures.digest(.success(image)),
                    "the read finished without the daemon"
                )
                #expect(Fixtures.digest(readWhileStopped(second, mount)) == Fixtures.digest(.success(image)))
                #expect(
                    second.mapped(count: image.count).map(Fixtures.sha256) == Fixtures.sha256(image),
                    "mmap maps the same bytes")
            }
            #expect(origin.totalRequests == 1)
            #expect(mount.stop() == 0, "a clean unmount: no file is left open")
        }
    }

    @Test("with the kernel's pages still cached, or another open through them, an open stays with the page cache")
    func pageCacheWhileCached() throws {
        let image = try Fixtures.largePNG()
        // The first read must leave the image's pages in the kernel: by default the reads of an image still arriving
        // bypass the page cache (DirectColdReadTests).
        try withMountedOrigin(["--tune", "direct-cold-reads=off"]) { origin, mount in
            origin.route("/big.png", .ok(image, contentType: "image/png"))
            let path = mount.path(origin.baseURL + "/big.png")
            #expect(Fixtures.digest(PosixFile.read(path)) == Fixtures.digest(.success(image)))
            releaseReachesImgfs()  // of that read's file
            do {
                // Pages cached: this open goes through the page cache.
                let cached = try OpenFile(path)
                #expect(Fixtures.digest(cached.readAll()) == Fixtures.digest(.success(image)))
                // Pages dropped while that open lives: the kernel refuses passthrough next to it, so this open must not
                // ask for it (it would fail with EIO); its reads come from imgfs.
                cached.dropCachedPages()
                let next = try OpenFile(path)
                #expect(Fixtures.digest(next.readAll()) == Fixtures.digest(.success(image)))
            }
            #expect(mount.stop() == 0, "a clean unmount")
        }
    }

    @Test("an open file keeps the image it opened; an open after a refresh with other bytes reads the new ones")
    func refreshWhileOpen() throws {
        let image = ChangingImage(try Fixtures.largeJPEG())
        let (first, second) = (image.first, image.second)
        try withMountedOrigin(["--expire", "1s"]) { origin, mount in
            image.route(on: origin, at: "/changing.jpg")
            let path = mount.path(origin.baseURL + "/changing.jpg")
            try readAndForget(path, expecting: first)
            do {
                let old = try OpenFile(path)  // passthrough, on the first body's file
                #expect(
                    Fixtures.digest(readWhileStopped(old, mount)) == Fixtures.digest(.success(first)),
                    "a passthrough open")
                image.change()
                Poll.elapse(1.3)  // past the 1 s expiry
                let new = try OpenFile(path)  // revalidated: other bytes, while the old passthrough open lives
                #expect(Fixtures.digest(new.readAll()) == Fixtures.digest(.success(second)), "the new bytes")
                #expect(
                    Fixtures.digest(old.readAll()) == Fixtures.digest(.success(first)),
                    "the open file's own image, whole")
            }
            #expect(origin.totalRequests == 2)
            #expect(mount.stop() == 0, "a clean unmount: no file is left open")
        }
    }
}
