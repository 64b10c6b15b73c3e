import Glibc
import ImgfsCore
import ImgfsSystem
import Testing

@Suite("memfd bodies")
struct MemfdMemoryTests {
    @Test("bytes written through the file show in the mapping; finishing cuts the file to the image's size")
    func writeMapFinish() throws {
        let memory = try #require(MemfdMemory())
        let part = try #require(memory.grow(by: 5000))
        #expect(part.count == 8192, "whole pages")
        let bytes = (0..<5000).map { UInt8($0 % 253) }
        #expect(bytes.withUnsafeBytes { memory.write($0, at: 0) })
        #expect(Array(part.prefix(5000)) == bytes, "the mapping shows what was written")
        let second = try #require(memory.grow(by: 1))
        #expect(second.baseAddress != part.baseAddress)
        let descriptor = try #require(memory.finish(count: 5000))
        var status = stat()
        #expect(fstat(descriptor, &status) == 0 && status.st_size == 5000)
        var back = [UInt8](repeating: 0, count: 6000)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == 5000 && Array(back.prefix(5000)) == bytes, "the file holds exactly the image")
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0, "not inherited by children")
    }

    @Test("an ImageBytes in memfd memory hands out a descriptor of exactly its bytes; small bodies stay in the heap")
    func imageBytes() throws {
        let choice = MemfdMemory.bodyMemory(largerThan: 1000) { true }
        let body = (0..<300_000).map { UInt8($0 % 241) }
        let bytes = ImageBytes(expectedCount: 100_000, memory: choice)  // announced too small: grows
        for start in stride(from: 0, to: body.count, by: 65_536) {
            body[start..<min(start + 65_536, body.count)].withUnsafeBytes { bytes.append($0) }
        }
        #expect(bytes.copyBytes() == body)
        let descriptor = try #require(bytes.completeDescriptor(size: body.count))
        var back = [UInt8](repeating: 0, count: body.count + 10)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == body.count && Array(back.prefix(body.count)) == body)
        let small = ImageBytes(copying: [1, 2, 3], memory: choice)
        #expect(small.completeDescriptor(size: 3) == nil)
        let off = ImageBytes(copying: body, memory: MemfdMemory.bodyMemory(largerThan: 1000) { false })
        #expect(off.completeDescriptor(size: body.count) == nil, "not while passthrough is unusable")
    }
}
