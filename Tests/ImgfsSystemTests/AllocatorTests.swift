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

    /// Sixteen transfers' receive buffers at once (512 KiB each, as curl's), freed together, ten times: with glibc's
    /// own thresholds the freed 8 MiB at the top of the heap is given back each time and faulted in again by the next
    /// round, 2,048 pages a round.
    @Test("keepFreedMemory: rounds of sixteen 512 KiB buffers reuse their pages instead of faulting them in again")
    func keepsFreedMemory() {
        #expect(Allocator.keepFreedMemory())
        let size = 512 << 10
        func round() {
            let blocks = (0..<16).map { _ in malloc(size)! }
            for block in blocks { memset(block, 0x5A, size) }
            for block in blocks { free(block) }
        }
        round()
        let before = minorFaults()
        for _ in 0..<10 { round() }
        let faults = minorFaults() - before
        #expect(faults < 2048, "\(faults) minor faults in ten rounds")
    }

    /// Minor page faults of the calling thread so far.
    private func minorFaults() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (Linux), which Glibc does not import
        return usage.ru_minflt
    }

    @Test("the resident size is read from VmRSS of /proc/self/status")
    func residentSize() throws {
        let before = try #require(Allocator.residentBytes())
        #expect(before > 1 << 20)
    }
}
