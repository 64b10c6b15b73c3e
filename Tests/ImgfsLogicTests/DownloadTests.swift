import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Download")
struct DownloadTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    @Test("a read is answered as soon as its range has arrived")
    func streams() {
        let download = Download(url: url, limits: .init(requireImage: false))
        let replies = Replies<[UInt8]>()
        download.read(offset: 0, count: 4) {
            replies.record((try? $0.get())?.bytes.copyBytes(offset: 0, count: 4) ?? [])
        }
        download.read(offset: 8, count: 4) {
            replies.record(
                (try? $0.get()).map { slice in
                    slice.withSegments { $0.flatMap { Array($0) } }
                } ?? [])
        }
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 12))
        [UInt8](0..<6).withUnsafeBytes { _ = download.transferDidReceive(bytes: $0) }
        #expect(replies.all == [[0, 1, 2, 3]], "the second range has not arrived")
        [UInt8](6..<12).withUnsafeBytes { _ = download.transferDidReceive(bytes: $0) }
        #expect(replies.all == [[0, 1, 2, 3], [8, 9, 10, 11]], "answered before the transfer completed")
    }

    @Test("reads past the end are clamped, and the size waits for the end when there is no Content-Length")
    func clampsAndWaitsForSize() {
        let download = Download(url: url, limits: .init(requireImage: false))
        let sizes = Replies<Int>()
        let counts = Replies<Int>()
        download.whenMetadataKnown { sizes.record((try? $0.get())?.size ?? -1) }
        download.read(offset: 2, count: 100) { counts.record((try? $0.get())?.count ?? -1) }
        download.transferDidReceive(head: ResponseHead(status: 200))
        [UInt8](repeating: 7, count: 5).withUnsafeBytes { _ = download.transferDidReceive(bytes: $0) }
        #expect(sizes.all.isEmpty)
        download.transferDidComplete(error: nil)
        #expect(sizes.all == [5])
        #expect(counts.all == [3])
        download.read(offset: 5, count: 10) { counts.record((try? $0.get())?.count ?? -1) }
        #expect(counts.all == [3, 0])
    }

    @Test("a body shorter than its Content-Length fails every waiter and is never served")
    func truncation() {
        let download = Download(url: url, limits: .init(requireImage: false))
        let errors = Replies<FetchError?>()
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 10))
        [UInt8](repeating: 1, count: 4).withUnsafeBytes { _ = download.transferDidReceive(bytes: $0) }
        download.read(offset: 0, count: 10) { result in
            if case .failure(let error) = result { errors.record(error) } else { errors.record(nil) }
        }
        download.transferDidComplete(error: nil)
        #expect(errors.all == [.truncated(expected: 10, received: 4)])
        download.read(offset: 0, count: 2) { result in
            if case .failure(let error) = result { errors.record(error) } else { errors.record(nil) }
        }
        #expect(errors.all.count == 2 && errors.all[1] != nil, "even the bytes that had arrived are refused")
        #expect(download.completeBytes == nil)
    }

    @Test("HTTP status errors map to the documented filesystem errors")
    func errorMapping() {
        #expect(FetchError.httpStatus(404).filesystemError == .notFound)
        #expect(FetchError.httpStatus(410).filesystemError == .notFound)
        #expect(FetchError.httpStatus(401).filesystemError == .accessDenied)
        #expect(FetchError.httpStatus(403).filesystemError == .accessDenied)
        #expect(FetchError.timedOut("connect").filesystemError == .timedOut)
        #expect(FetchError.httpStatus(500).filesystemError == .ioFailure)
        #expect(FetchError.transport("reset").filesystemError == .ioFailure)
        #expect(FetchError.httpStatus(404).description == "HTTP 404 Not Found")
    }
}

@Suite("Download limits")
struct DownloadLimitTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    private func outcome(_ download: Download, read count: Int = 100) -> Replies<Result<Int, FetchError>> {
        let replies = Replies<Result<Int, FetchError>>()
        download.read(offset: 0, count: count) { replies.record($0.map(\.count)) }
        return replies
    }

    @Test("a body that is not an image is refused before any byte is served")
    func notAnImage() {
        let download = Download(url: url)
        let replies = outcome(download, read: 10)
        #expect(download.transferDidReceive(head: ResponseHead(status: 200)))
        let html = Array("<!DOCTYPE html><html><body>Not found</body></html>".utf8)
        #expect(html.withUnsafeBytes { download.transferDidReceive(bytes: $0) })
        #expect(replies.all.isEmpty, "nothing is served before the body is known to be an image")
        download.transferDidComplete(error: nil)
        guard case .failure(.notAnImage(let what))? = replies.all.first else {
            Issue.record("expected notAnImage, got \(replies.all)")
            return
        }
        #expect(what.hasPrefix("HTML"))
        #expect(FetchError.notAnImage(what).filesystemError == .notAnImage)
    }

    @Test("a PNG is served as soon as its signature has been seen; its size is known then too, not before")
    func image() {
        let download = Download(url: url)
        let replies = outcome(download, read: 8)
        let sizes = Replies<Int>()
        download.whenMetadataKnown { sizes.record((try? $0.get())?.size ?? -1) }
        _ = download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 4096))
        #expect(sizes.all.isEmpty, "an empty or non-image body must not look like a file yet")
        let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + [UInt8](repeating: 0, count: 2040)
        _ = png.withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        #expect(replies.all == [.success(8)])
        #expect(sizes.all == [4096], "known at the signature, before the transfer completed")
    }

    @Test("an announced size over the cap fails at the header; a body that grows over it stops the transfer")
    func sizeCap() {
        let announced = Download(url: url, limits: .init(maxSize: 1000, requireImage: false))
        let first = outcome(announced)
        #expect(!announced.transferDidReceive(head: ResponseHead(status: 200, contentLength: 5000)))
        #expect(first.all == [.failure(.tooLarge(size: 5000, limit: 1000))])
        let growing = Download(url: url, limits: .init(maxSize: 1000, requireImage: false))
        let second = outcome(growing, read: 2000)
        _ = growing.transferDidReceive(head: ResponseHead(status: 200))
        let chunk = [UInt8](repeating: 1, count: 600)
        #expect(chunk.withUnsafeBytes { growing.transferDidReceive(bytes: $0) })
        #expect(!chunk.withUnsafeBytes { growing.transferDidReceive(bytes: $0) })
        #expect(second.all == [.failure(.tooLarge(size: nil, limit: 1000))])
        #expect(FetchError.tooLarge(size: nil, limit: 1).filesystemError == .fileTooLarge)
    }
}

@Suite("Abandoned transfers")
struct AbandonedTransferTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    final class CountingHandle: TransferHandle, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var cancels: Int { lock.withLock { count } }
        func cancel() { lock.withLock { count += 1 } }
    }

    @Test("called off when no handle is open, nobody waits for the size, and less than half arrived")
    func rule() {
        let download = Download(url: url, limits: .init(requireImage: false))
        let handle = CountingHandle()
        download.attach(handle)
        let opener = Interest()
        download.whenMetadataKnown(interest: opener) { _ in }
        #expect(!download.cancelIfAbandoned(openHandles: 0), "an open still waits for the size")
        opener.withdraw()
        #expect(!download.cancelIfAbandoned(openHandles: 1), "a handle is open")
        #expect(download.cancelIfAbandoned(openHandles: 0))
        #expect(handle.cancels == 1)

        let late = Download(url: url, limits: .init(requireImage: false))
        late.attach(handle)
        _ = late.transferDidReceive(head: ResponseHead(status: 200, contentLength: 100))
        _ = [UInt8](repeating: 1, count: 60).withUnsafeBytes { late.transferDidReceive(bytes: $0) }
        late.read(offset: 90, count: 10, interest: Interest()) { _ in }
        #expect(!late.cancelIfAbandoned(openHandles: 0), "more than half arrived: it finishes for the cache")
        #expect(handle.cancels == 1)
    }
}
