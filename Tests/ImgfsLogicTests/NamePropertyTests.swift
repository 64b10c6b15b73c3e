import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// Property-based fuzzing of the name decoder and the long-URL scheme: thousands of seeded random inputs, no crash,
/// and every invariant holds.
@Suite("Name properties (fuzz)")
struct NamePropertyTests {
    /// SplitMix64: a small seeded generator, so a failure can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    private static let pieces: [String] = [
        "a", "Z", "0", "-", ".", "_", "~", "/", "?", "=", "&", "#", "%", "%2F", "+",
        ":", "@", "[", "]", "é", "ß", "日本", "🖼", "%zz", "%C3%A9"
    ]
    /// Pieces no URL may hold; drawn rarely, so most generated URLs are valid and some are not.
    private static let forbidden: [String] = [" ", "\u{7f}", "\u{0}", "\n"]

    private func randomURL(_ generator: inout Generator) -> String {
        let scheme = ["http", "https", "HTTPS", "ftp", "file", ""].randomElement(using: &generator)!
        let host = ["example.com", "127.0.0.1", "[::1]", "bücher.example", "", "a:b@c"].randomElement(
            using: &generator)!
        let length = Int.random(in: 0...2500, using: &generator)
        var path = "/"
        while path.utf8.count < length {
            let rare = Int.random(in: 0..<2000, using: &generator) == 0
            path += (rare ? Self.forbidden : Self.pieces).randomElement(using: &generator)!
        }
        return "\(scheme)://\(host)\(path)"
    }

    @Test("decoding 20,000 random byte strings never crashes, and whatever decodes re-encodes to an equivalent name")
    func decoderFuzz() throws {
        var generator = Generator(state: 0x1D_F5)
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...300, using: &generator)
            let bytes = (0..<count).map { _ in
                Bool.random(using: &generator) ? UInt8(ascii: "%") : UInt8.random(in: 0...255, using: &generator)
            }
            guard let text = try? NameCodec.decode(bytes) else { continue }
            #expect(try NameCodec.decode(Array(NameCodec.encode(text).utf8)) == text)
        }
    }

    @Test("5,000 random URLs: every accepted one round-trips and gets a path within the limits that resolves back")
    func longURLSchemeFuzz() throws {
        var generator = Generator(state: 0xBEEF)
        var accepted = 0
        for _ in 0..<5_000 {
            let text = randomURL(&generator)
            guard let url = try? ImageURL(text) else { continue }
            accepted += 1
            let encoded = NameCodec.encode(url.string)
            #expect(try NameCodec.decode(Array(encoded.utf8)) == url.string)
            let mountLength = Int.random(in: 1...1000, using: &generator)
            let form = ImagePath.form(for: url, mountPointLength: mountLength)
            let path = form.relativePath
            #expect(mountLength + 1 + path.utf8.count <= ImagePath.pathLimit)
            #expect(path.split(separator: "/").allSatisfy { $0.utf8.count <= ImagePath.componentLimit })
            switch form {
            case .plain(let name):
                #expect(try NameCodec.decode(Array(name.utf8)) == url.string)
            case .chunked(let chunks), .digest(_, let chunks):
                let joined = chunks.map { ImagePath.isContinuation(Array($0.utf8)) ? String($0.dropLast()) : $0 }
                    .joined()
                #expect(joined == encoded)
            }
        }
        #expect(accepted > 500, "the generator produces enough valid URLs (\(accepted))")
    }

    @Test("10,000 random names looked up in img/ and in chunk directories never crash, and invalid ones fetch nothing")
    func lookupFuzz() throws {
        let fetcher = ManualFetcher()
        var configuration = ImageRepository.Configuration()
        configuration.policy = .cacheOnly
        let repository = ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: nil,
            configuration: configuration, logger: .init(label: "fuzz"))
        let filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(),
            logger: .init(label: "fuzz"))
        var generator = Generator(state: 0xC0FFEE)
        let chunkRoot = try filesystem.lookup(parent: InodeTable.imagesInode, name: Array("+".utf8)).get().attributes
            .inode
        for _ in 0..<10_000 {
            let count = Int.random(in: 1...400, using: &generator)
            let name = (0..<count).map { _ in UInt8.random(in: 1...255, using: &generator) }.filter {
                $0 != UInt8(ascii: "/")
            }
            guard !name.isEmpty else { continue }
            _ = filesystem.lookup(
                parent: Bool.random(using: &generator) ? InodeTable.imagesInode : chunkRoot, name: name)
        }
        #expect(fetcher.transfers.isEmpty, "cache-only: nothing was fetched")
    }
}
