import ImgfsModel
import Testing

@Suite("Long-name registry")
struct LongNameRegistryTests {
    @Test("registrations beyond the byte limit push out the oldest; the newest always resolve")
    func bounded() throws {
        let registry = LongNameRegistry(byteLimit: 64 * 1024)
        let urls = try (0..<3000).map {
            try ImageURL("http://127.0.0.1/\($0).png?sig=" + String(repeating: "a", count: 300))
        }
        let names = urls.map { registry.register($0) }
        let bytesPerURL = urls[0].string.utf8.count
        #expect(registry.count <= 64 * 1024 / bytesPerURL + 1, "\(registry.count) names kept")
        #expect(registry.resolve(names[0]) == nil, "the oldest was not pushed out")
        #expect(registry.resolve(names[2999]) == urls[2999])
        #expect(registry.resolve(names[2990]) == urls[2990])
        // Registering again does not duplicate it.
        let before = registry.count
        registry.register(urls[2999])
        #expect(registry.count == before)
    }
}
