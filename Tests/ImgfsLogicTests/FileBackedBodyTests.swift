import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Synchronization
import Testing

/// ``FileBackedMemory`` that keeps its "file" in an array and hands out ordinary memory as the mapped parts, so the
/// tests can see what went through the file.
final class FakeFileMemory: FileBackedMemory, @unchecked Sendable {
    private struct State {
        var file: [UInt8] = []
        var parts: [UnsafeMutableRawBufferPointer] = []
        var writes = 0
        var finishedAt: Int?
        /// The file ranges let go by ``releasePages(_:)``.
        var released: [Range<Int>] = []
    }

    private var unsafeState = State()
    private let lock = NSLock()
    /// How many parts it grants before refusing.
    let grants: Int
    static let descriptor: Int32 = 42

    init(grants: Int = .max) {
        self.grants = grants
    }

    deinit { unsafeState.parts.forEach { $0.deallocate() } }

    private func withState<Result>(_ body: (inout State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&unsafeState)
    }

    var file: [UInt8] { withState { $0.file } }
    var writes: Int { withState { $0.writes } }
    var finishedAt: Int? { withState { $0.finishedAt } }
    var released: [Range<Int>] { withState { $0.released } }

    func grow(by byteCount: Int) -> UnsafeMutableRawBufferPointer? {
        withState { state in
            guard state.parts.count < grants else { return nil }
            let size = (byteCount + 7) / 8 * 8  // like pages, parts are rounded up
            let part = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
            part.initializeMemory(as: UInt8.self, repeating: 0)
            state.parts.append(part)
            state.file += [UInt8](repeating: 0, count: size)
            return part
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        withState { state in
            guard offset + bytes.count <= state.file.count else { return false }
            state.file.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            state.writes += 1
            // What a shared mapping shows: the same bytes in the part that maps this range.
            var start = 0
            for part in state.parts {
                let lower = max(offset, start), upper = min(offset + bytes.count, start + part.count)
                if lower < upper {
                    UnsafeMutableRawBufferPointer(rebasing: part[(lower - start)..<(upper - start)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(lower - offset)..<(upper - offset)]))
                }
                start += part.count
            }
            return true
        }
    }

    func releasePages(_ part: UnsafeRawBufferPointer) {
        withState { state in
            var start = 0
            for mapped in state.parts {
                let offset = part.baseAddress! - UnsafeRawPointer(mapped.baseAddress!)
                if offset >= 0 && offset < mapped.count {
                    state.released.append(start + offset..<start + offset + part.count)
                }
                start += mapped.count
            }
        }
    }

    func finish(count: Int) -> Int32? {
        withState { state in
            state.finishedAt = count
            state.file.removeLast(state.file.count - count)
            return Self.descriptor
        }
    }
}

@Suite("Bodies in file-backed memory")
struct FileBackedBodyTests {
    private func append(_ bytes: ImageBytes, _ values: [UInt8]) {
        values.withUnsafeBytes { bytes.append($0) }
    }

    private func memory(_ file: FakeFileMemory) -> BodyMemory {
        BodyMemory { _ in file }
    }

    @Test("bytes go through the file at their offsets; the descriptor comes once all of the image is there")
    func writesThroughTheFile() {
        let file = FakeFileMemory()
        let bytes = ImageBytes(expectedCount: 10, memory: memory(file))
        append(bytes, [1, 2, 3, 4])
        #expect(bytes.completeDescriptor(size: 10) == nil, "4 of 10 bytes")
        append(bytes, [5, 6, 7, 8, 9, 10])
        #expect(bytes.completeDescriptor(size: 10) == FakeFileMemory.descriptor)
        #expect(file.file == Array(1...10), "the file is cut to the image")
        #expect(file.finishedAt == 10)
        #expect(bytes.copyBytes() == Array(1...10), "readers see the bytes through the mapping")
    }

    @Test("a body larger than announced grows the file in order, so file offsets stay image offsets")
    func growsInOrder() {
        let file = FakeFileMemory()
        let bytes = ImageBytes(expectedCount: 5, memory: memory(file))
        let body = (0..<300).map { UInt8($0 % 251) }
        for start in stride(from: 0, to: body.count, by: 7) {
            append(bytes, Array(body[start..<min(start + 7, body.count)]))
        }
        #expect(bytes.copyBytes() == body)
        #expect(bytes.completeDescriptor(size: body.count) == FakeFileMemory.descriptor)
        #expect(file.file == body)
    }

    @Test("a slice handed on lets go of the file's pages it covers, across parts; ordinary memory is left alone")
    func releasesPages() {
        let file = FakeFileMemory(grants: 2)
        let bytes = ImageBytes(expectedCount: 8, memory: memory(file))
        let body = (0..<200_000).map { UInt8($0 % 256) }
        for start in stride(from: 0, to: body.count, by: 65_536) {
            append(bytes, Array(body[start..<min(start + 65_536, body.count)]))
        }
        // Parts: 8 bytes, then 64 KiB, then ordinary memory (the fake grants two parts).
        ImageSlice(bytes, size: body.count, offset: 4, count: 100_000).releasePages()
        #expect(file.released == [4..<8, 8..<65_544], "the two file parts, not the ordinary memory")
        #expect(bytes.copyBytes() == body)
        ImageSlice(bytes, size: body.count, offset: 150_000, count: 1000).releasePages()
        #expect(file.released.count == 2, "bytes in ordinary memory have no pages to release")
    }

    @Test("when the file cannot grow, the rest goes to ordinary memory and no descriptor is handed out")
    func fallsBack() {
        let file = FakeFileMemory(grants: 1)
        let bytes = ImageBytes(expectedCount: 8, memory: memory(file))
        let body = (0..<200).map { UInt8($0 % 256) }
        append(bytes, body)
        #expect(bytes.copyBytes() == body)
        #expect(bytes.completeDescriptor(size: body.count) == nil)
        #expect(file.finishedAt == nil)
    }

    @Test("after the descriptor was handed out, more bytes stay out of the file and no descriptor is given again")
    func nothingAfterFinish() {
        let file = FakeFileMemory()
        let bytes = ImageBytes(expectedCount: 4, memory: memory(file))
        append(bytes, [1, 2, 3, 4])
        #expect(bytes.completeDescriptor(size: 4) == FakeFileMemory.descriptor)
        let writes = file.writes
        append(bytes, [5, 6])
        #expect(file.writes == writes)
        #expect(file.file == [1, 2, 3, 4])
        #expect(bytes.copyBytes() == [1, 2, 3, 4, 5, 6])
        #expect(bytes.completeDescriptor(size: 6) == nil)
    }

    @Test("ordinary memory has no descriptor; BodyMemory is asked with the announced size")
    func ordinary() {
        let asked = Mutex<[Int]>([])
        let none = BodyMemory { size in
            asked.withLock { $0.append(size) }
            return nil
        }
        let bytes = ImageBytes(expectedCount: 3, memory: none)
        append(bytes, [1, 2, 3])
        #expect(bytes.completeDescriptor(size: 3) == nil)
        #expect(asked.withLock { $0 } == [3])
        #expect(ImageBytes(copying: [1, 2], memory: none).completeDescriptor(size: 2) == nil)
    }

    @Test("an open of a whole image over the preload limit carries its file; a small one its preload instead")
    func openCarriesTheFile() throws {
        let fetcher = ManualFetcher()
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.bodyMemory = BodyMemory { size in size > ImageFilesystem.preloadLimit ? FakeFileMemory() : nil }
        let repository = ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 4 << 20), disk: nil,
            configuration: configuration, logger: .init(label: "test"))
        let filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(),
            logger: .init(label: "test"))
        let large = [UInt8](repeating: 9, count: ImageFilesystem.preloadLimit + 10)
        var opens: [ImageFilesystem.OpenFile] = []
        for (index, body) in [large, [1, 2, 3]].enumerated() {
            let replies = Replies<Result<Entry, FilesystemError>>()
            filesystem.lookup(
                parent: InodeTable.imagesInode, name: Array(NameCodec.encode("http://127.0.0.1/\(index).png").utf8),
                waitForSize: true
            ) { replies.record($0) }
            fetcher.respond(index, body: body)
            let inode = try #require(replies.all.first).get().attributes.inode
            let opened = Replies<ImageFilesystem.OpenFile?>()
            filesystem.open(inode, forWriting: false, caller: .root) { opened.record(try? $0.get()) }
            opens.append(try #require(opened.all.first ?? nil))
        }
        #expect(opens[0].kernelReadable?.descriptor == FakeFileMemory.descriptor)
        #expect(opens[0].preload == nil)
        #expect(opens[1].kernelReadable == nil)
        #expect(opens[1].preload != nil)
    }
}
