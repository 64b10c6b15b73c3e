import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

/// A body that starts again from byte 0 (a retry that could not resume) never mixes with the bytes readers had.
@Suite("Download restarts")
struct DownloadRestartTests {
    private let url: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
    }

    private func receive(_ download: Download, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { download.transferDidReceive(bytes: $0) }
    }

    private func started(_ first: [UInt8]) -> Download {
        let download = Download(url: url, limits: .init(requireImage: false))
        download.transferDidReceive(head: ResponseHead(status: 200, contentLength: 8))
        _ = receive(download, first)
        return download
    }

    @Test("with no byte handed to a reader, the new body replaces the old one")
    func replacesUnreadBytes() {
        let download = started([1, 2, 3, 4])
        #expect(download.transferDidRestart(head: ResponseHead(status: 200, contentLength: 8)))
        #expect(receive(download, [9, 9, 9, 9, 9, 9, 9, 9]))
        download.transferDidComplete(error: nil)
        #expect(download.completeBytes?.copyBytes() == [9, 9, 9, 9, 9, 9, 9, 9])
    }

    @Test("after a reader had bytes, the new body must repeat them: the same bytes go on, others fail")
    func repeatsReadBytes() {
        for (second, whole) in [([1, 2, 3, 4, 5, 6, 7, 8] as [UInt8], true), ([1, 2, 7, 4, 5, 6, 7, 8], false)] {
            let download = started([1, 2, 3, 4])
            let read = Locked<[UInt8]>([])
            download.read(offset: 0, count: 2) { result in
                read.withLock { $0 = (try? result.get())?.bytes.copyBytes(offset: 0, count: 2) ?? [] }
            }
            #expect(read.withLock { $0 } == [1, 2])
            #expect(download.transferDidRestart(head: ResponseHead(status: 200, contentLength: 8)))
            _ = receive(download, Array(second[..<3]))
            _ = receive(download, Array(second[3...]))
            download.transferDidComplete(error: nil)
            if whole {
                #expect(download.completeBytes?.copyBytes() == second)
            } else {
                #expect(download.completeBytes == nil)
                #expect(download.phase.failure?.kind == "changed")
            }
        }
    }

    @Test("a new body of another size is refused")
    func refusesAnotherSize() {
        let download = started([1, 2, 3, 4])
        #expect(!download.transferDidRestart(head: ResponseHead(status: 200, contentLength: 9)))
        #expect(download.phase.failure?.kind == "changed")
    }
}

extension Download.Phase {
    fileprivate var failure: FetchError? {
        if case .failed(let error, _) = self { return error }
        return nil
    }
}
