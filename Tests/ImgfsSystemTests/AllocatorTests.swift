import ImgfsSystem
import Testing

@Suite("Allocator")
struct AllocatorTests {
    @Test("the resident size is plausible and trim does not crash")
    func residentAndTrim() throws {
        let before = try #require(Allocator.residentBytes())
        #expect(before > 1 << 20)
        let blocks = (0..<64).map { _ in [UInt8](repeating: 1, count: 64 << 10) }
        #expect(blocks.count == 64)
        Allocator.trim()
        Allocator.trim()
        let after = try #require(Allocator.residentBytes())
        #expect(after > 1 << 20)
    }
}
