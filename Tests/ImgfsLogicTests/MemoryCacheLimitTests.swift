import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Memory cache under a memory limit")
struct MemoryCacheLimitTests {
    private func image(_ name: String, size: Int) throws -> CachedImage {
        CachedImage(
            url: try ImageURL("http://127.0.0.1/\(name)"),
            bytes: ImageBytes(copying: [UInt8](repeating: 1, count: size)),
            metadata: ImageMetadata(size: size), expiresAt: .distantFuture)
    }

    @Test("a memory limit lowers the budget at once (never above the configured one); nil restores it")
    func limitedBudget() throws {
        let cache = MemoryCache(budget: 1000)
        for index in 0..<3 { try cache.insert(image("\(index)", size: 300), forKey: "\(index)") }
        #expect(cache.limit(to: 400) == 400)
        #expect(cache.keys == ["2"] && cache.totalBytes == 300, "the least recently used went at once")
        #expect(try !cache.insert(image("big", size: 500), forKey: "big"))
        #expect(cache.limit(to: 5000) == 1000, "never above the configured budget")
        #expect(cache.limit(to: nil) == 1000 && cache.budget == 1000)
    }
}
