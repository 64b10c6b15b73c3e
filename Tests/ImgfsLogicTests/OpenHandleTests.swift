import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// An open image file is a handle that holds what its open found: its reads go to that, not back to the repository.
@Suite("Open file handles")
struct OpenHandleTests {
    private let fetcher = ManualFetcher()
    private let repository: ImageRepository
    private let filesystem: ImageFilesystem

    init() {
        repository = ImageRepository.forTests(fetcher: fetcher)
        filesystem = ImageFilesystem(repository: repository, registry: LongNameRegistry(), logger: .init(label: "test"))
    }

    /// Looks `url` up and opens it: its inode and the open's handle (nil while the open waits).
    private func open(_ url: String) throws -> (inode: UInt64, handle: Replies<UInt64>) {
        let name = Array(NameCodec.encode(url).utf8)
        let inode = try filesystem.lookup(parent: InodeTable.imagesInode, name: name).get().attributes.inode
        let handle = Replies<UInt64>()
        filesystem.open(inode, forWriting: false, caller: .root) { result in
            if case .success(let file) = result { handle.record(file.handle) }
        }
        return (inode, handle)
    }

    private func read(_ inode: UInt64, _ handle: UInt64, offset: Int, count: Int, into replies: Replies<[UInt8]>) {
        filesystem.read(inode, handle: handle, offset: offset, count: count) { result in
            replies.record((try? result.get()).map { $0.bytes.copyBytes(offset: $0.offset, count: $0.count) } ?? [])
        }
    }

    @Test("one open and 100 reads of a running download resolve the URL once: reads are no callers of the transfer")
    func readsDoNotResolve() throws {
        let body = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let (inode, handles) = try open("http://127.0.0.1/a.png")
        let observer = fetcher.transfers[0].observer
        _ = observer.transferDidReceive(
            head: ResponseHead(status: 200, contentLength: body.count, contentType: "image/png"))
        let handle = try #require(handles.all.first)
        #expect(handle != 0)
        let joined = repository.statistics().counters.joined
        #expect(joined == 1, "the open joined the lookup's transfer")
        let misses = repository.statistics().memory.misses
        let replies = Replies<[UInt8]>()
        for index in 0..<100 { read(inode, handle, offset: index * 10, count: 10, into: replies) }
        #expect(replies.all.isEmpty, "the reads wait for their bytes")
        body[..<500].withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        #expect(replies.all.count == 50)
        body[500...].withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        observer.transferDidComplete(error: nil)
        #expect(replies.all.count == 100 && replies.all.flatMap { $0 }.sorted() == body.sorted())
        #expect(repository.statistics().counters.joined == joined, "no read joined the transfer")
        #expect(repository.statistics().memory.misses == misses, "no read looked in the caches")
        #expect(fetcher.transfers.count == 1)
    }

    @Test("an open file reads the bytes it opened after a purge; a failed transfer's reads get its error")
    func heldBodiesAndFailures() throws {
        let (inode, handles) = try open("http://127.0.0.1/a.png")
        fetcher.respond(body: [1, 2, 3, 4])
        let handle = try #require(handles.all.first)
        repository.purge(.disk)
        let replies = Replies<[UInt8]>()
        read(inode, handle, offset: 1, count: 2, into: replies)
        #expect(replies.all == [[2, 3]] && fetcher.transfers.count == 1, "the open's bytes, without a new transfer")
        let failing = try open("http://127.0.0.1/b.png")
        _ = fetcher.transfers[1].observer.transferDidReceive(
            head: ResponseHead(status: 200, contentLength: 4, contentType: "image/png"))
        let failingHandle = try #require(failing.handle.all.first)
        let errors = Replies<FilesystemError?>()
        filesystem.read(failing.inode, handle: failingHandle, offset: 0, count: 4) { errors.record($0.failure) }
        fetcher.fail(1, .httpStatus(404))
        #expect(errors.all == [.notFound], "the reader waiting on the transfer gets its error")
        filesystem.read(failing.inode, handle: failingHandle, offset: 0, count: 4) { errors.record($0.failure) }
        #expect(errors.all == [.notFound, .notFound], "later reads resolve again: the remembered failure")
        #expect(fetcher.transfers.count == 2)
    }

    @Test("only the last release of an image's handles lets its transfer be called off")
    func releaseCounts() throws {
        let (inode, handles) = try open("http://127.0.0.1/a.png")
        let second = Replies<UInt64>()
        filesystem.open(inode, forWriting: false, caller: .root) { second.record((try? $0.get())?.handle ?? 0) }
        _ = fetcher.transfers[0].observer.transferDidReceive(
            head: ResponseHead(status: 200, contentLength: 4096, contentType: "image/png"))
        let (first, other) = try (#require(handles.all.first), #require(second.all.first))
        #expect(first != other)
        #expect(filesystem.release(inode, handle: first))
        #expect(fetcher.cancelCount == 0, "one handle is still open")
        #expect(filesystem.release(inode, handle: other))
        #expect(fetcher.cancelCount == 1, "nobody has it open, and nothing of it has arrived")
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
