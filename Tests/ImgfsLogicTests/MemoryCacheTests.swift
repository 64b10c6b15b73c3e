import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Memory cache")
struct MemoryCacheTests {
    private func image(_ name: String, size: Int) throws -> CachedImage {
        CachedImage(
            url: try ImageURL("http://127.0.0.1/\(name)"),
            bytes: ImageBytes(copying: [UInt8](repeating: 1, count: size)),
            metadata: ImageMetadata(size: size), expiresAt: .distantFuture)
    }

    @Test("stays within its budget, dropping the least recently used first")
    func budget() throws {
        let cache = MemoryCache(budget: 1000)
        for index in 0..<10 { try cache.insert(image("\(index)", size: 300), forKey: "\(index)") }
        #expect(cache.totalBytes <= 1000)
        #expect(cache.count == 3)
        #expect(cache.keys.sorted() == ["7", "8", "9"])
        _ = cache.image(forKey: "7")
        try cache.insert(image("10", size: 300), forKey: "10")
        #expect(cache.keys.sorted() == ["10", "7", "9"], "7 was used, so 8 went")
        #expect(cache.counters.evictions == 8)
        #expect(try !cache.insert(image("huge", size: 2000), forKey: "huge"))
        #expect(cache.peek("huge") == nil)
    }

    @Test("a purge empties it while a reader keeps its bytes")
    func purgeKeepsReadersBytes() throws {
        let cache = MemoryCache(budget: 1 << 20)
        try cache.insert(image("a", size: 1000), forKey: "a")
        let held = cache.image(forKey: "a")!
        #expect(cache.purge() == 1000)
        #expect(cache.totalBytes == 0 && cache.count == 0)
        #expect(held.bytes.copyBytes() == [UInt8](repeating: 1, count: 1000))
        #expect(cache.counters.purges == 1)
    }
}
