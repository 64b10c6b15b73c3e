import Foundation
import ImgfsSystem
import Testing

@Suite("zlib CRC-32")
struct ZlibCRC32Tests {
    @Test("zlib's crc32_z is found in the process and gives the CRC-32 of zlib, PNG and Ethernet, piece by piece")
    func matchesTheStandard() throws {
        let update = try #require(ZlibCRC32.update, "libz is loaded (libcurl links it)")
        let text = Array("123456789".utf8)
        #expect(text.withUnsafeBytes { update(0, $0) } == 0xCBF4_3926)
        var bytes = [UInt8](repeating: 0, count: 300_001)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 7 &+ index >> 9) }
        let whole = bytes.withUnsafeBytes { update(0, $0) }
        let pieces = bytes.withUnsafeBytes { buffer in
            stride(from: 0, to: buffer.count, by: 65_537).reduce(UInt32(0)) { crc, start in
                update(crc, UnsafeRawBufferPointer(rebasing: buffer[start..<min(buffer.count, start + 65_537)]))
            }
        }
        #expect(whole == pieces)
        #expect([UInt8]().withUnsafeBytes { update(0x1234, $0) } == 0x1234, "no bytes: the CRC unchanged")
    }
}
