import ImgfsModel
import Testing

/// HMAC-SHA-256 against the test vectors of RFC 4231 (section 4), which the shared tier's fleet key relies on.
@Suite("HMAC-SHA-256")
struct HMACSHA256Tests {
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    private static let longKey = [UInt8](repeating: 0xaa, count: 131)

    /// RFC 4231 test cases 1-4, 6 and 7 (key, data, HMAC-SHA-256).
    static let vectors: [(String, [UInt8], [UInt8], String)] = [
        (
            "1", [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            "2", Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            "3", [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        (
            "4", Array(1...25), [UInt8](repeating: 0xcd, count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            "6", longKey, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            "7", longKey,
            Array(
                ("This is a test using a larger than block-size key and a larger than block-size data. The key needs to"
                    + " be hashed before being used by the HMAC algorithm.").utf8),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        )
    ]

    @Test("RFC 4231 test cases 1-4, 6 and 7")
    func vectors() {
        for (name, key, data, expected) in Self.vectors {
            #expect(Self.hex(HMACSHA256.code(key: key, message: data)) == expected, "test case \(name)")
        }
    }

    @Test("RFC 4231 test case 5: the first 128 bits")
    func truncated() {
        let key = [UInt8](repeating: 0x0c, count: 20)
        let code = HMACSHA256.code(key: key, message: Array("Test With Truncation".utf8))
        #expect(Self.hex(Array(code.prefix(16))) == "a3b6167473100ee06e0c796c2955552b")
    }

    @Test("fed in pieces (across block boundaries) gives the same code as at once; a keyed value can be reused")
    func incremental() {
        let (_, key, data, expected) = Self.vectors[5]
        let keyed = HMACSHA256(key: key)
        for split in [0, 1, 63, 64, 65, data.count] {
            var mac = keyed
            mac.update(data[..<split])
            mac.update(data[split...])
            #expect(Self.hex(mac.finish()) == expected, "split at \(split)")
        }
    }

    @Test("matches compares every byte and the length")
    func matches() {
        #expect(HMACSHA256.matches([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.matches([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.matches([1, 2, 3], [1, 2]))
    }
}
