import ImgfsCore
import Testing

@Suite("Download")
struct DownloadTests {
    private let url = try! ImageURL("http://127.0.0.1/a.png")

    @Test("a read is answered as soon as its range has arrived")
    func streams() {
        let download = Download(url: url)
        let replies = Replies<[UInt8]>()
        download.read(offset: 0, count: 4) { replies.record((try? $0.get())?.bytes.copyBytes(offset: 0, count: 4) ?? []) }
        download.read(offset: 8, count: 4) { replies.record((try? $0.get()).map { slice in
            slice.withSegments { $0.flatMap { Array($0) } } } ?? []) }
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 12))
        [UInt8](0..<6).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        #expect(replies.all == [[0, 1, 2, 3]], "the second range has not arrived")
        [UInt8](6..<12).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        #expect(replies.all == [[0, 1, 2, 3], [8, 9, 10, 11]], "answered before the transfer completed")
    }

    @Test("reads past the end are clamped, and the size waits for the end when there is no Content-Length")
    func clampsAndWaitsForSize() {
        let download = Download(url: url)
        let sizes = Replies<Int>()
        let counts = Replies<Int>()
        download.whenMetadataKnown { sizes.record((try? $0.get())?.size ?? -1) }
        download.read(offset: 2, count: 100) { counts.record((try? $0.get())?.count ?? -1) }
        download.transferDidReceive(head: ResponseHead(status: 200))
        [UInt8](repeating: 7, count: 5).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
        #expect(sizes.all.isEmpty)
        download.transferDidComplete(error: nil)
        #expect(sizes.all == [5])
        #expect(counts.all == [3])
        download.read(offset: 5, count: 10) { counts.record((try? $0.get())?.count ?? -1) }
        #expect(counts.all == [3, 0])
    }

    @Test("a body shorter than its Content-Length fails every waiter and is never served")
    func truncation() {
        let download = Download(url: url)
        let errors = Replies<FetchError?>()
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 10))
        [UInt8](repeating: 1, count: 4).withUnsafeBytes { download.transferDidReceive(bytes: $0) }
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

