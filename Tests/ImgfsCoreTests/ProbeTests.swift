import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// A stat's (or a listed folder's lookup's) transfer is a probe of the first bytes; an open continues it after them,
/// or takes a new body whole when the image changed; an open's own transfer, and a lookup under img/, is an ordinary
/// GET.
@Suite("Probes instead of downloads")
struct ProbeTests {
    private let fetcher = ManualFetcher()
    private let repository: ImageRepository
    private let filesystem: ImageFilesystem
    private let image: [UInt8] = (0..<(ImageRepository.probeBytes * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    init() {
        repository = ImageRepository.forTests(fetcher: fetcher)
        filesystem = ImageFilesystem(repository: repository, registry: LongNameRegistry(), logger: .init(label: "test"))
    }

    private func url(_ path: String) throws -> ImageURL { try ImageURL("http://127.0.0.1/\(path)") }

    /// Stats `path` (a probe) and answers the probe; returns the size the stat was given.
    private func probed(_ path: String) throws -> Int {
        let sizes = Replies<Int>()
        repository.metadata(try url(path), refresh: false, probe: true) { sizes.record((try? $0.get().size) ?? -1) }
        #expect(fetcher.transfers.last?.request.probeBytes == ImageRepository.probeBytes)
        fetcher.respondProbe(fetcher.transfers.count - 1, body: image)
        return try #require(sizes.all.first)
    }

    /// Opens `path` and reads all of it once the continuation `answer` was played.
    private func openAndRead(_ path: String, answer: (Int) -> Void) throws -> (size: Int, bytes: [UInt8]) {
        let opened = Replies<Int>()
        repository.opening(try url(path), fileAbove: 1 << 30) {
            opened.record((try? $0.get().found.metadata.size) ?? -1)
        }
        #expect(opened.all.isEmpty, "the open waits until the continuation's answer is decided")
        answer(fetcher.transfers.count - 1)
        let size = try #require(opened.all.first)
        let read = Replies<[UInt8]>()
        repository.read(try url(path), offset: 0, count: 1 << 20) {
            read.record((try? $0.get())?.bytes.copyBytes() ?? [])
        }
        return (size, try #require(read.all.first))
    }

    @Test("a stat's transfer asks for the first bytes and answers the whole size; the transfer then stops")
    func statProbes() throws {
        #expect(try probed("a.jpg") == image.count)
        #expect(fetcher.transfers.count == 1)
        let again = Replies<Int>()
        repository.metadata(try url("a.jpg"), refresh: false, probe: true) { again.record((try? $0.get().size) ?? -1) }
        #expect(again.all == [image.count], "a second stat answers from the probe")
        #expect(fetcher.transfers.count == 1, "no request for it")
    }

    @Test("an open after a probe asks for the rest only (Range from the probe's end, with its validator)")
    func openContinues() throws {
        _ = try probed("b.jpg")
        let (size, bytes) = try openAndRead("b.jpg") { index in
            let request = fetcher.transfers[index].request
            #expect(request.continuedFrom == ImageRepository.probeBytes)
            #expect(request.continuedHead?.etag == "\"v1\"")
            #expect(request.probeBytes == nil)
            fetcher.respondRest(index, body: image)
        }
        #expect(fetcher.transfers.count == 2)
        #expect(size == image.count)
        #expect(bytes == image)
    }

    @Test("an image that changed between the probe and the open is read whole in its new version, never mixed")
    func changedImageIsNotMixed() throws {
        _ = try probed("c.jpg")
        let changed = Array(image.reversed()) + [1, 2, 3]
        let (size, bytes) = try openAndRead("c.jpg") { index in
            fetcher.respondRestart(index, body: changed, etag: "\"v2\"")
        }
        #expect(size == changed.count)
        #expect(bytes == changed)
    }

    @Test("a server that ignores Range sends the same version again from byte 0: taken whole")
    func sameVersionAgain() throws {
        _ = try probed("g.jpg")
        let (size, bytes) = try openAndRead("g.jpg") { index in
            fetcher.respondRestart(index, body: image, etag: "\"v1\"")
        }
        #expect(size == image.count)
        #expect(bytes == image)
    }

    @Test("a probed download is continued once, however many want the rest")
    func continuedOnce() throws {
        let download = Download(url: try url("d.jpg"), limits: .init(requireImage: false), probeLimit: 4)
        let started = Replies<Int>()
        download.install(
            .init(
                continueAfter: { _, _, offset in
                    started.record(offset)
                    return NoHandle()
                }, probed: {}, replaced: { _ in }))
        var head = ResponseHead(status: 206, contentLength: 10, etag: "\"v1\"")
        head.contentRange = ContentRange(first: 0, last: 3, total: 10)
        #expect(download.transferDidReceive(head: head))
        _ = ([0xFF, 0xD8, 0xFF, 0xE0] as [UInt8]).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        download.transferDidComplete(error: nil)
        #expect(download.isProbed)
        #expect(download.currentMetadata?.size == 10)
        download.wantRest()
        download.wantRest()
        #expect(started.all == [4])
        #expect(download.currentMetadata == nil, "withheld until the continuation's answer is decided")
        #expect(!download.dropProbe(), "a probe someone wants is not dropped")
    }

    @Test("a lookup under img/ and an open start ordinary GETs, not probes")
    func readsAreNoProbes() throws {
        _ = filesystem.lookup(
            parent: InodeTable.imagesInode, name: Array(NameCodec.encode("http://127.0.0.1/e.jpg").utf8))
        #expect(fetcher.transfers.last?.request.probeBytes == nil)
        repository.opening(try url("f.jpg"), fileAbove: 1 << 20) { _ in }
        #expect(fetcher.transfers.count == 2)
        #expect(fetcher.transfers.last?.request.probeBytes == nil)
    }
}

private struct NoHandle: TransferHandle {
    func cancel() {}
}
