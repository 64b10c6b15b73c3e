import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// A lookup's or stat's transfer is a probe of the first bytes; an open continues it after them, or takes a new body
/// whole when the image changed; an open's own transfer is an ordinary GET.
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

    private func name(_ path: String) -> [UInt8] { Array(NameCodec.encode("http://127.0.0.1/\(path)").utf8) }

    /// Looks `path` up (waiting for the size) and answers its probe; returns the entry.
    private func probed(_ path: String) throws -> Entry {
        let replies = Replies<Result<Entry, FilesystemError>>()
        filesystem.lookup(parent: InodeTable.imagesInode, name: name(path), waitForSize: true) { replies.record($0) }
        #expect(fetcher.transfers.last?.request.probeBytes == ImageRepository.probeBytes)
        fetcher.respondProbe(fetcher.transfers.count - 1, body: image)
        return try #require(replies.all.first).get()
    }

    /// Opens `inode` and reads all of it once the continuation `answer` was played.
    private func openAndRead(_ inode: UInt64, answer: (Int) -> Void) throws -> [UInt8] {
        let opened = Replies<Result<ImageFilesystem.OpenFile, FilesystemError>>()
        filesystem.open(inode, forWriting: false, caller: .root) { opened.record($0) }
        #expect(opened.all.isEmpty, "the open waits until the continuation's answer is decided")
        answer(fetcher.transfers.count - 1)
        let handle = try #require(opened.all.first).get().handle
        let read = Replies<Result<ImageSlice, FilesystemError>>()
        filesystem.read(inode, handle: handle, offset: 0, count: 1 << 20) { read.record($0) }
        return try #require(read.all.first).get().bytes.copyBytes()
    }

    @Test("a lookup's transfer asks for the first bytes and answers the whole size; the transfer then stops")
    func lookupProbes() throws {
        let entry = try probed("a.jpg")
        #expect(entry.attributes.size == image.count)
        #expect(fetcher.transfers.count == 1)
        let getattr = Replies<Result<Entry, FilesystemError>>()
        filesystem.getattr(entry.attributes.inode) { getattr.record($0) }
        #expect((try? getattr.all.first?.get())?.attributes.size == image.count, "stat answers from the probe")
        #expect(fetcher.transfers.count == 1, "no request for the stat")
    }

    @Test("an open after a probe asks for the rest only (Range from the probe's end, with its validator)")
    func openContinues() throws {
        let entry = try probed("b.jpg")
        let bytes = try openAndRead(entry.attributes.inode) { index in
            let request = fetcher.transfers[index].request
            #expect(request.continuedFrom == ImageRepository.probeBytes)
            #expect(request.continuedHead?.etag == "\"v1\"")
            #expect(request.probeBytes == nil)
            fetcher.respondRest(index, body: image)
        }
        #expect(fetcher.transfers.count == 2)
        #expect(bytes == image)
    }

    @Test("an image that changed between the probe and the open is read whole in its new version, never mixed")
    func changedImageIsNotMixed() throws {
        let entry = try probed("c.jpg")
        let changed = Array(image.reversed()) + [1, 2, 3]
        let bytes = try openAndRead(entry.attributes.inode) { index in
            fetcher.respondRestart(index, body: changed, etag: "\"v2\"")
        }
        #expect(bytes == changed)
        let getattr = Replies<Result<Entry, FilesystemError>>()
        filesystem.getattr(entry.attributes.inode) { getattr.record($0) }
        #expect((try? getattr.all.first?.get())?.attributes.size == changed.count)
    }

    @Test("a probed download is continued once, however many want the rest")
    func continuedOnce() throws {
        let download = Download(
            url: try ImageURL("http://127.0.0.1/d.jpg"), limits: .init(requireImage: false), probeLimit: 4)
        let started = Replies<Int>()
        download.install(
            .init(
                continueAfter: { _, _, offset in
                    started.record(offset)
                    return NoHandle()
                }, probed: {}, replaced: {}))
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

    @Test("an open of an uncached image starts an ordinary GET, not a probe")
    func openIsNoProbe() throws {
        let inode = try filesystem.lookup(parent: InodeTable.imagesInode, name: name("e.jpg")).get().attributes.inode
        filesystem.open(inode, forWriting: false, caller: .root) { _ in }
        #expect(fetcher.transfers.count == 1, "the lookup's probe is joined")
        let fresh = ImageRepository.forTests(fetcher: fetcher)
        fresh.opening(try ImageURL("http://127.0.0.1/f.jpg"), fileAbove: 1 << 20) { _ in }
        #expect(fetcher.transfers.last?.request.probeBytes == nil)
    }
}

private struct NoHandle: TransferHandle {
    func cancel() {}
}
