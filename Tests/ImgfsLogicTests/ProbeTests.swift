import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// A stat's transfer is a probe of the first bytes; an open continues it after them, or takes a new body whole when
/// the image changed (or fails when an open was told the old size); an open's own transfer, and a lookup's under img/,
/// is an ordinary GET.
@Suite("Probes instead of downloads")
struct ProbeTests {
    private let fixture = ProbeFixture()
    private var fetcher: ManualFetcher { fixture.fetcher }
    private var repository: ImageRepository { fixture.repository }
    private var filesystem: ImageFilesystem { fixture.filesystem }
    private var image: [UInt8] { fixture.image }

    private func url(_ path: String) throws -> ImageURL { try fixture.url(path) }

    /// Stats `path` (a probe) and answers the probe; returns the size the stat was given.
    private func probed(_ path: String) throws -> Int {
        let sizes = Replies<Int>()
        repository.metadata(try url(path), refresh: false, start: .probe) { sizes.record((try? $0.get().size) ?? -1) }
        #expect(fetcher.transfers.last?.request.probeBytes == ImageRepository.probeBytes)
        fetcher.respondProbe(fetcher.transfers.count - 1, body: image)
        return try #require(sizes.all.first)
    }

    /// Opens `path` and reads all of it once the continuation `answer` was played.
    private func openAndRead(_ path: String, answer: (Int) -> Void) throws -> (size: Int, bytes: [UInt8]) {
        let opened = try fixture.openAndRead(path, answer: answer)
        #expect(opened.sizesBefore.isEmpty, "the open waits until the continuation's answer is decided")
        return (try #require(opened.sizes.first), opened.bytes)
    }

    @Test("a stat's transfer asks for the first bytes and answers the whole size; the transfer then stops")
    func statProbes() throws {
        #expect(try probed("a.jpg") == image.count)
        #expect(fetcher.transfers.count == 1)
        let again = Replies<Int>()
        repository.metadata(try url("a.jpg"), refresh: false, start: .probe) {
            again.record((try? $0.get().size) ?? -1)
        }
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

    @Test("a lookup's probe keeps its bytes in the whole image's file until it ends as a probe, then in their size")
    func lookupProbeBody() throws {
        let (joined, joinedFile) = try lookupProbe(openJoins: true)
        #expect(!joined.isProbed && joinedFile.object != nil, "an open joined: the whole image, in its file")
        let (ended, endedFile) = try lookupProbe(openJoins: false)
        #expect(ended.isProbed, "nobody came: it ended as a probe")
        #expect(endedFile.object == nil, "the probe's bytes left the whole image's file")
        let kept = Replies<[UInt8]>()
        ended.read(offset: 0, count: 4, servesReader: false) { result in
            kept.record((try? result.get()).map { slice in slice.withSegments { $0.flatMap { Array($0) } } } ?? [])
        }
        #expect(kept.all == [[1, 2, 3, 4]], "and are kept, the probe's 4 (the fifth came past the probe's end)")
        #expect(ended.probedFirstBytes(count: 10) == [1, 2, 3, 4], "nothing past the probe's end is kept")
    }

    /// A lookup's probe of a 10-byte image that received 5 bytes and ended (`openJoins`: after an open wanted the
    /// rest), and the file its body was first put in, held weakly.
    private func lookupProbe(openJoins: Bool) throws -> (Download, WeakFile) {
        let file = FakeFileMemory()
        let download = Download(
            url: try url("l.jpg"), limits: .init(requireImage: false), memory: BodyMemory { [weak file] _ in file },
            probeLimit: 4, pausesAtProbe: true)
        download.install(.init(continueAfter: { _, _, _ in NoHandle() }, probed: {}, replaced: { _ in }))
        #expect(download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 10, etag: "\"v1\"")))
        _ = ([1, 2, 3, 4, 5] as [UInt8]).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        #expect(file.file.prefix(5) == [1, 2, 3, 4, 5], "in the file from the head on (an open finds it there)")
        if openJoins { download.wantRest() }
        download.transferDidComplete(error: nil)
        return (download, WeakFile(object: file))
    }

    @Test("a lookup under img/ and an open start a whole GET, a stat a probe; a lookup never continues a probe")
    func lookupsAndOpensAreWhole() throws {
        let name = { (path: String) in Array(NameCodec.encode("http://127.0.0.1/\(path)").utf8) }
        #expect(throws: Never.self) { try filesystem.lookup(parent: InodeTable.imagesInode, name: name("e.jpg")).get() }
        #expect(fetcher.transfers.count == 1)
        #expect(fetcher.transfers.last?.request.pausesAtProbe == true, "a lookup's GET: whole unless no open comes")
        #expect(fetcher.transfers.last?.request.probeBytes == ImageRepository.probeBytes)
        repository.opening(try url("f.jpg"), fileAbove: 1 << 20) { _ in }
        #expect(fetcher.transfers.count == 2)
        #expect(fetcher.transfers.last?.request.probeBytes == nil, "an open's transfer is one whole GET")
        #expect(try probed("h.jpg") == image.count)
        #expect(fetcher.transfers.count == 3)
        let entry = filesystem.lookup(parent: InodeTable.imagesInode, name: name("h.jpg"))
        #expect((try? entry.get().attributes.size) == image.count, "the probe's size")
        #expect(fetcher.transfers.count == 3, "a lookup (perhaps a stat's) does not ask a probe for the rest")
    }

    @Test("an open told the size of a probe under way: a new version of another size fails, is not remembered")
    func changedAfterOpenWasToldItsSize() throws {
        let url = try url("r.jpg")
        repository.metadata(url, refresh: false, start: .probe) { _ in }
        let opened = Replies<Int>()
        let bodies = Replies<OpenedBody>()
        repository.opening(url, fileAbove: 1 << 30) { result in
            opened.record((try? result.get().found.metadata.size) ?? -1)
            if let body = try? result.get().body { bodies.record(body) }
        }
        fetcher.respondProbe(0, body: image)
        #expect(opened.all == [image.count], "the open joined the probe under way and was told its size")
        #expect(fetcher.transfers.count == 2, "the rest is asked for at once")
        fetcher.respondRestart(1, body: image + [9, 9, 9], etag: "\"v2\"")
        guard case .download(let download)? = bodies.all.first else {
            Issue.record("the open reads from the transfer")
            return
        }
        let read = Replies<String>()
        download.read(offset: ImageRepository.probeBytes, count: 4096) { result in
            switch result {
            case .success: read.record("bytes")
            case .failure(let error): read.record(error.kind)
            }
        }
        #expect(read.all == ["changed"], "never a body of a size the open was not told")
        #expect(repository.prepare(url) == .success(nil), "not remembered: the next use starts over")
        #expect(fetcher.transfers.count == 3)
        #expect(fetcher.transfers.last?.request.probeBytes == nil)
    }

    @Test("probe(): size, validators, format and first bytes in one call, from a probe or a cached copy")
    func probeFacts() throws {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + image.dropFirst(4)
        let facts = Replies<ProbedImage?>()
        repository.probe(try url("p.jpg")) { facts.record(try? $0.get()) }
        #expect(fetcher.transfers.last?.request.probeBytes == ImageRepository.probeBytes)
        fetcher.respondProbe(0, body: jpeg)
        let probed = try #require(facts.all.first ?? nil)
        #expect(probed.metadata.size == jpeg.count)
        #expect(probed.metadata.etag == "\"v1\"")
        #expect(probed.format == .jpeg)
        #expect(probed.firstBytes == Array(jpeg.prefix(ImageRepository.probeBytes)))
        // The first bytes were read for what they tell, not by a reader: a new version is still read whole.
        let (size, bytes) = try openAndRead("p.jpg") { index in
            fetcher.respondRestart(index, body: image + [1], etag: "\"v2\"")
        }
        #expect(size == image.count + 1)
        #expect(bytes == image + [1])
        let cached = Replies<ProbedImage?>()
        repository.probe(try url("p.jpg")) { cached.record(try? $0.get()) }
        #expect(fetcher.transfers.count == 2, "a cached copy answers without a request")
        #expect(cached.all.first??.firstBytes == Array((image + [1]).prefix(ImageRepository.probeBytes)))
    }
}

private struct WeakFile {
    weak var object: FakeFileMemory?
}

private struct NoHandle: TransferHandle {
    func cancel() {}
}
