import CStoreShims
import ImgfsModel

/// CRC-32 as in zlib, PNG and Ethernet (reflected polynomial 0xEDB88320): the checksum of the disk cache's bodies and
/// of the shared tier's pieces. One implementation, in C (CStoreShims): folds with the processor's carry-less
/// multiplication where it has it, a byte table otherwise.
///
/// Guarantees: `checksum(of: "123456789")` is 0xCBF43926; feeding a body piece by piece (``update(_:with:)``) gives
/// the value of feeding it at once.
public enum CRC32 {
    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, with: bytes)
    }

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// Extends `crc`, the CRC-32 of earlier bytes (0 for none), with `bytes`.
    package static func update(_ crc: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
        return imgfs_crc32_update(crc, base, bytes.count)
    }

    /// Whether the processor's carry-less multiplication is used.
    public static var isAccelerated: Bool { imgfs_crc32_accelerated() != 0 }
}
