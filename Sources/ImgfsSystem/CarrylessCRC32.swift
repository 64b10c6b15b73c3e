import CCRC32

/// CRC-32 computed with the processor's carry-less multiplication (CCRC32): the checksum of the disk cache's own
/// tables and of zlib, several times faster than zlib's where the processor has PCLMULQDQ (about 7.5 GB/s for zlib's,
/// 17 GB/s with PCLMULQDQ and 50 GB/s with VPCLMULQDQ on AVX-512 registers, in the processor's cache, on the
/// development machine).
///
/// Guarantees: ``update`` is nil unless the processor has carry-less multiplication and the function gives the standard
/// check value (0xCBF43926 for "123456789"); it extends a CRC piece by piece like ``ImgfsCore/DiskCacheCRC32``.
public enum CarrylessCRC32 {
    /// Extends `crc` (0 for none) with `bytes`, or nil when the processor cannot multiply without carries.
    public static let update: (@Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32)? = {
        guard imgfs_crc32_accelerated() != 0 else { return nil }
        let update: @Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32 = { crc, bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return crc }
            return imgfs_crc32_update(crc, base, bytes.count)
        }
        return CRC32CheckValue.verified(update)
    }()
}
