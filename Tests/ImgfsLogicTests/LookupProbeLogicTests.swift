import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// A lookup's transfer (``TransferStart/lookup``) is one whole GET that its fetcher ends after the probe's bytes when
/// no open wants the rest in time: its bytes are then kept as a probe's, and an open continues from there; an open that
/// joins in time has it go on, one request.
@Suite("A lookup's whole GET that stops after the probe")
struct LookupProbeLogicTests {
    private let fixture = ProbeFixture()
    private var fetcher: ManualFetcher { fixture.fetcher }
    private var filesystem: ImageFilesystem { fixture.filesystem }
    private var repository: ImageRepository { fixture.repository }
    private var image: [UInt8] { fixture.image }

    private func url(_ path: String) throws -> ImageURL { try fixture.url(path) }

    /// Looks `path` up under img/ (its transfer starts); returns that transfer's observer.
    private func lookUp(_ path: String) throws -> any TransferObserving {
        let name = Array(NameCodec.encode("http://127.0.0.1/\(path)").utf8)
        _ = filesystem.lookup(parent: InodeTable.imagesInode, name: name)
        let started = try #require(fetcher.transfers.last)
        #expect(started.request.pausesAtProbe && started.request.probeBytes == ImageRepository.probeBytes)
        return started.observer
    }

    /// Opens `path` and reads all of it, once `answer` has played what the open's transfer needs.
    private func openAndRead(_ path: String, answer: () -> Void) throws -> [UInt8] {
        let opened = try fixture.openAndRead(path) { _ in answer() }
        #expect(opened.sizes == [image.count])
        return opened.bytes
    }

    private func head(etag: String? = "\"v1\"") -> ResponseHead {
        ResponseHead(status: 200, contentLength: image.count, contentType: "image/png", etag: etag)
    }

    @Test("stopped after the probe's bytes (nobody opened): a stat answers from them, an open continues after them")
    func stoppedThenContinued() throws {
        let observer = try lookUp("a.jpg")
        #expect(observer.transferDidReceive(head: head()))
        #expect(!observer.wantsRest, "nobody opened it: the fetcher may stop it after the probe's bytes")
        image.prefix(ImageRepository.probeBytes).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)  // the fetcher ended it there
        let size = Replies<Int>()
        repository.metadata(try url("a.jpg"), refresh: false, start: .probe) { size.record((try? $0.get().size) ?? -1) }
        #expect(size.all == [image.count], "the stat answers from what it kept")
        #expect(fetcher.transfers.count == 1)
        let bytes = try openAndRead("a.jpg") {
            #expect(fetcher.transfers.count == 2, "the open continues it")
            #expect(fetcher.transfers.last?.request.continuedFrom == ImageRepository.probeBytes)
            #expect(fetcher.transfers.last?.request.continuedHead?.etag == "\"v1\"")
            fetcher.respondRest(1, body: image)
        }
        #expect(bytes == image, "the probe's bytes and the rest, exactly")
    }

    @Test("an open that joins before the probe's end has the GET go on: one request, the fetcher told once")
    func openJoinsInTime() throws {
        let observer = try lookUp("b.jpg")
        #expect(observer.transferDidReceive(head: head()))
        image.prefix(10_000).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        let bytes = try openAndRead("b.jpg") {
            #expect(observer.wantsRest, "the open wants the rest")
            #expect(fetcher.restWantedCount == 1, "a fetcher that paused it is told")
            // The rest of the same GET, after the bytes held so far moved to a body for the whole image.
            image.dropFirst(10_000).withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
            observer.transferDidComplete(error: nil)
        }
        #expect(bytes == image)
        #expect(fetcher.transfers.count == 1, "one request")
        #expect(fetcher.restWantedCount == 1, "reads do not tell it again")
    }

    @Test("an open before the head: the body is the whole image's from the start")
    func openBeforeHead() throws {
        let observer = try lookUp("c.jpg")
        let bytes = try openAndRead("c.jpg") {
            #expect(observer.wantsRest)
            #expect(observer.transferDidReceive(head: head()))
            image.withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
            observer.transferDidComplete(error: nil)
        }
        #expect(bytes == image)
        #expect(fetcher.transfers.count == 1)
    }

    @Test("a probe that went on past its first bytes for an open that did not come keeps only those: an open continues")
    func windowBytesDropped() throws {
        let observer = try lookUp("w.jpg")
        #expect(observer.transferDidReceive(head: head()))
        // The fetcher went on past the probe's end while it expected an open, then ended it there.
        image.prefix(2 * ImageRepository.probeBytes + 100).withUnsafeBytes {
            _ = observer.transferDidReceive(bytes: $0)
        }
        observer.transferDidComplete(error: nil)
        let bytes = try openAndRead("w.jpg") {
            #expect(fetcher.transfers.count == 2, "the open continues it")
            #expect(fetcher.transfers.last?.request.continuedFrom == ImageRepository.probeBytes, "after the probe's")
            fetcher.respondRest(1, body: image)
        }
        #expect(bytes == image, "the probe's bytes and the rest, exactly")
    }

    @Test("a new caller, or one that opened what it looked up, is expected to open; one that only looked up is not")
    func callersThatRead() throws {
        let reader = Caller(uid: 0, thread: 7)
        func lookUp(_ path: String, by caller: Caller) throws -> (request: FetchRequest, inode: UInt64) {
            let name = Array(NameCodec.encode("http://127.0.0.1/\(path)").utf8)
            let entry = try filesystem.lookup(parent: InodeTable.imagesInode, name: name, caller: caller).get()
            let request = try #require(fetcher.transfers.last?.request)
            #expect(request.pausesAtProbe)
            return (request, entry.attributes.inode)
        }
        #expect(try lookUp("r1.jpg", by: reader).request.expectsOpen, "not seen yet: it may be reading")
        let second = try lookUp("r2.jpg", by: reader)
        #expect(!second.request.expectsOpen, "it did not open what it looked up: a stat")
        filesystem.open(second.inode, forWriting: false, caller: reader) { _ in }
        #expect(try lookUp("r3.jpg", by: reader).request.expectsOpen, "it opened what it looked up: a reader")
        #expect(!(try lookUp("r4.jpg", by: .root).request.expectsOpen), "the kernel's own lookups are stats")
        #expect(!(try lookUp("r5.jpg", by: reader).request.expectsOpen), "r3 was not opened")
    }

    @Test("a prefetch or a read-ahead's lookup is an ordinary whole GET; so is an open's")
    func othersAreWhole() throws {
        _ = repository.prepare(try url("d.jpg"), priority: .background, start: .lookup)
        let prefetched = try #require(fetcher.transfers.last?.request)
        #expect(prefetched.probeBytes == nil && !prefetched.pausesAtProbe)
        repository.opening(try url("e.jpg"), fileAbove: 1 << 20) { _ in }
        let opened = try #require(fetcher.transfers.last?.request)
        #expect(opened.probeBytes == nil && !opened.pausesAtProbe)
    }
}
