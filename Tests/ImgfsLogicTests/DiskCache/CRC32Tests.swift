import Foundation
import Testing

@testable import ImgfsStore

@Suite("CRC-32")
struct CRC32Tests {
    /// The CRC-32 a bit at a time, as the standard defines it: what the folds and the byte table must agree with.
    private static func reference(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var value = ~crc
        for byte in bytes {
            value ^= UInt32(byte)
            for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0xEDB8_8320 : value >> 1 }
        }
        return ~value
    }

    @Test("the standard check value; every length, alignment and starting CRC agrees with the bitwise definition")
    func matchesTheDefinition() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("123456780".utf8)) != 0xCBF4_3926, "one changed byte changes the CRC")
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var mismatches: [String] = []
        bytes.withUnsafeBytes { buffer in
            // Every length to 1,100 (bytes only, one 16-byte fold, four lanes, the wide registers and their tails),
            // then random ones to 1 MiB, each at a random offset (alignment) with a random starting CRC.
            let lengths = Array(0...1_100) + (0..<40).map { _ in Int.random(in: 1_101...(1 << 20) - 64) }
            for length in lengths {
                let start = Int.random(in: 0..<64)
                let piece = UnsafeRawBufferPointer(rebasing: buffer[start..<start + length])
                let crc = UInt32.random(in: 0...UInt32.max)
                if CRC32.update(crc, with: piece) != Self.reference(crc, piece) {
                    mismatches.append("\(length) at \(start)")
                }
            }
        }
        #expect(mismatches.isEmpty, "lengths that differ, the first ten: \(mismatches.prefix(10))")
    }

    @Test("piece by piece gives the value of the whole")
    func pieceByPiece() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let whole = CRC32.checksum(bytes)
        let pieces = bytes.withUnsafeBytes { buffer -> UInt32 in
            var crc: UInt32 = 0
            var start = 0
            for size in [1, 15, 16, 17, 511, 512, 4_096, 30_000] where start + size <= buffer.count {
                crc = CRC32.update(crc, with: UnsafeRawBufferPointer(rebasing: buffer[start..<start + size]))
                start += size
            }
            return CRC32.update(crc, with: UnsafeRawBufferPointer(rebasing: buffer[start...]))
        }
        #expect(pieces == whole)
    }
}
