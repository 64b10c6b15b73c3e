import Foundation
import Testing

@testable import ImgfsFilesystem
@testable import ImgfsModel
@testable import ImgfsPipeline

/// The one place that decides how an open is answered, driven without the kernel: a fake registers backing files.
@Suite("Open decisions")
struct OpenDecisionTests {
    private final class FakeBacking: BackingFileRegistering, @unchecked Sendable {
        let log = Locked<[String]>([])
        var isUsable: Bool { true }
        func register(_ descriptor: Int32) -> Int32? {
            log.withLock { $0.append("register \(descriptor)") }
            return 7
        }
        func unregister(_ backingId: Int32) { log.withLock { $0.append("unregister \(backingId)") } }
    }

    /// A whole image of `size` bytes in file-backed memory: a body the kernel may read by itself.
    private func body(size: Int = 10) -> KernelReadableBody {
        let bytes = ImageBytes(expectedCount: size, memory: BodyMemory { _ in FakeFileMemory() })
        [UInt8](repeating: 1, count: size).withUnsafeBytes { bytes.append($0) }
        return KernelReadableBody(ImageSlice(bytes: bytes, offset: 0, count: size), size: size)!
    }

    private func file(_ body: KernelReadableBody? = nil, arrivingAlone: Bool = false) -> ImageFilesystem.OpenFile {
        ImageFilesystem.OpenFile(handle: 1, directIO: false, kernelReadable: body, arrivingAlone: arrivingAlone)
    }

    @Test("generated files read with direct IO; an image still arriving alone bypasses the page cache when allowed")
    func directAndPageCache() {
        let decision = OpenDecision()
        #expect(decision.begin(1, file: .init(handle: 1, directIO: true)) == .directIO)
        #expect(decision.begin(2, file: file()) == .pageCache)
        #expect(decision.begin(3, file: file(arrivingAlone: true), bypassWhileArriving: true) == .directIO)
        #expect(decision.begin(4, file: file(arrivingAlone: true)) == .pageCache)
        #expect(!decision.asksWhetherPagesAreCached(2, file: file(body())), "no passthrough without backing files")
    }

    @Test("passthrough registers once per inode, later opens share it, the last end drops it; not next to page cache")
    func passthroughRules() {
        let backing = FakeBacking()
        let decision = OpenDecision(backing: backing)
        let first = body(), other = body()
        #expect(decision.asksWhetherPagesAreCached(1, file: file(first)))
        #expect(decision.begin(1, file: file(first)) == .passthrough(backingId: 7, readsFromDaemon: false))
        #expect(!decision.asksWhetherPagesAreCached(1, file: file(first)), "the inode's mode is chosen")
        #expect(decision.begin(1, file: file(other)) == .passthrough(backingId: 7, readsFromDaemon: true))
        decision.end(1)
        #expect(backing.log.withLock { $0 } == ["register \(FakeFileMemory.descriptor)"])
        decision.end(1)
        #expect(backing.log.withLock { $0 }.last == "unregister 7")
        #expect(decision.begin(2, file: file(first), pagesCached: true) == .pageCache, "the kernel's pages serve it")
        #expect(decision.begin(2, file: file(first)) == .pageCache, "next to a page-cache open")
        #expect(backing.log.withLock { $0 }.count == 2)
    }
}
