import Foundation
import ImgfsSystem
import Testing

@Suite("carry-less CRC-32")
struct CarrylessCRC32Tests {
    @Test("gives zlib's CRC-32 for every length, alignment and starting CRC, in the narrow and the wide folds")
    func matchesZlib() throws {
        let update = try #require(CarrylessCRC32.update, "the processor has PCLMULQDQ (every x86-64 since 2010)")
        let reference = try #require(ZlibCRC32.update, "libz is loaded (libcurl links it)")
        #expect(Array("123456789".utf8).withUnsafeBytes { update(0, $0) } == 0xCBF4_3926)
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var mismatches: [String] = []
        bytes.withUnsafeBytes { buffer in
            // Every length to 1,100 (bytes only, one 16-byte fold, four lanes, the wide registers and their tails),
            // then random ones to 3 MiB, each at a random offset (alignment) with a random starting CRC.
            let lengths = Array(0...1_100) + (0..<300).map { _ in Int.random(in: 1_101...(3 << 20) - 64) }
            for length in lengths {
                let start = Int.random(in: 0..<64)
                let piece = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
                let crc = UInt32.random(in: 0...UInt32.max)
                if update(crc, piece) != reference(crc, piece) { mismatches.append("\(length) at \(start)") }
            }
        }
        let differing = mismatches.count
        #expect(differing == 0, "lengths that differ from zlib, the first ten: \(mismatches.prefix(10))")
        let wrong = Array("123456780".utf8).withUnsafeBytes { update(0, $0) }
        #expect(wrong != 0xCBF4_3926, "one changed byte changes the CRC")
    }
}
