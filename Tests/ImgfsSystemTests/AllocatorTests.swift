import Glibc
import ImgfsSystem
import Testing

@Suite("Allocator")
struct AllocatorTests {
    /// 64 MiB in 32 KiB heap blocks (below glibc's mmap threshold), all freed but the last, which pins the top of the
    /// heap so that glibc cannot give the memory back by itself: only `malloc_trim` returns the free pages inside.
    @Test("trim gives freed heap memory back: the resident size falls by most of what was freed")
    func trimReturnsFreedHeap() throws {
        let blockSize = 32 << 10
        let blocks = (0..<2048).map { _ in
            let block = malloc(blockSize)!
            memset(block, 0x5A, blockSize)
            return block
        }
        let filled = try #require(Allocator.residentBytes())
        for block in blocks.dropLast() { free(block) }
        Allocator.trim()
        let trimmed = try #require(Allocator.residentBytes())
        free(blocks.last!)
        #expect(filled - trimmed > 32 << 20, "resident \(filled >> 20) MiB before, \(trimmed >> 20) MiB after the trim")
    }

    @Test("the resident size is read from VmRSS of /proc/self/status")
    func residentSize() throws {
        let before = try #require(Allocator.residentBytes())
        #expect(before > 1 << 20)
    }
}
