import Foundation
import ImgfsModel
import ImgfsPipeline
import Synchronization
import Testing

/// Who wants a transfer (issue 34, item 3): the fetcher calls off one nobody wants when a waited one needs its place.
@Suite("Download: who wants it")
struct DownloadWantedTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    @Test("a stat waiting is wanted until answered or interrupted; a stat answered leaves the transfer unwanted")
    func metadataWaiters() {
        let download = Download(url: url, limits: .init(requireImage: false))
        #expect(!download.isWanted, "started by a lookup alone")
        let interest = Interest()
        download.whenMetadataKnown(interest: interest) { _ in }
        #expect(download.isWanted)
        interest.withdraw()
        #expect(!download.isWanted, "the stat was interrupted")
        download.whenMetadataKnown { _ in }
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 8))
        #expect(!download.isWanted, "answered: nobody waits for the body")
    }

    @Test("a pending read, a wait for the whole body and an open file handle make it wanted")
    func readsBodiesAndHandles() {
        let download = Download(url: url, limits: .init(requireImage: false))
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 8))
        download.read(offset: 0, count: 8) { _ in }
        #expect(download.isWanted)
        [UInt8](0..<8).withUnsafeBytes { _ = download.transferDidReceive(bytes: $0) }
        #expect(!download.isWanted, "the read was answered")

        let waited = Download(url: url, limits: .init(requireImage: false))
        waited.whenFinished { _ in }
        #expect(!waited.isWanted, "bookkeeping is not a waiter")
        waited.whenFinished(waiting: true) { _ in }
        #expect(waited.isWanted, "a variant waits for its original")
        waited.transferDidComplete(error: .cancelled)
        #expect(!waited.isWanted)

        let open = Atomic<Bool>(true)
        let held = Download(url: url, limits: .init(requireImage: false)) { open.load(ordering: .relaxed) }
        #expect(held.isWanted)
        open.store(false, ordering: .relaxed)
        #expect(!held.isWanted, "the last handle was closed")
    }
}
