import ImgfsModel
import ImgfsSystem
import Testing

/// OpenSSL's SHA-256 compression, installed into the core's SHA-256 (what the executable does at start).
@Suite("OpenSSL SHA-256")
struct OpenSSLSHA256Tests {
    @Test("found in the process (libcurl links libcrypto); installed, digests and HMACs are right, whole or in pieces")
    func installed() throws {
        let compress = try #require(OpenSSLSHA256.compress)
        SHA256.install(compress)
        let message = (0..<100_000).map { UInt8($0 % 251) }
        let expected = "cd2df694e424bc7968cc37f47751019e5ca0cd1bdf2e479ea537c3a1c32ee1aa"
        #expect(SHA256.hex(of: message) == expected)
        for split in [1, 63, 64, 1000, 1024, 50_001] {
            var hash = SHA256()
            hash.update(message[..<split])
            hash.update(message[split...])
            let hex = hash.finish().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            #expect(hex == expected, "split at \(split)")
        }
        let code = HMACSHA256.code(key: [UInt8](repeating: 0xaa, count: 131), message: message)
        let codeHex = code.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(codeHex == "767a9690f469fd84ae213186162be972b4ba71a921d687d9df24e543f9420a57")
    }
}
