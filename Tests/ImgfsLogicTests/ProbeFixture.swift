import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// A repository and a filesystem on a ``ManualFetcher``, and an image three probes long, for the tests of probes and
/// of a lookup's GET that stops after the probe (each test plays the transfers by hand).
struct ProbeFixture {
    let fetcher = ManualFetcher()
    let repository: ImageRepository
    let filesystem: ImageFilesystem
    let image: [UInt8] = (0..<(ImageRepository.probeBytes * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    init() {
        repository = ImageRepository.forTests(fetcher: fetcher)
        filesystem = ImageFilesystem(repository: repository, registry: LongNameRegistry(), logger: .init(label: "test"))
    }

    func url(_ path: String) throws -> ImageURL { try ImageURL("http://127.0.0.1/\(path)") }

    /// Opens `path`, has `answer` play what the open's transfer needs (given the index of the newest transfer), then
    /// reads all of it: the sizes the open was told before `answer` and after it, and the bytes read.
    func openAndRead(
        _ path: String, answer: (Int) -> Void
    ) throws -> (sizesBefore: [Int], sizes: [Int], bytes: [UInt8]) {
        let opened = Replies<Int>()
        repository.opening(try url(path), fileAbove: 1 << 30) {
            opened.record((try? $0.get().found.metadata.size) ?? -1)
        }
        let before = opened.all
        answer(fetcher.transfers.count - 1)
        let read = Replies<[UInt8]>()
        repository.read(try url(path), offset: 0, count: 1 << 20) {
            read.record((try? $0.get())?.bytes.copyBytes() ?? [])
        }
        return (before, opened.all, try #require(read.all.first))
    }
}
