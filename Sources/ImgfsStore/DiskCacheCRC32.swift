import ImgfsModel

/// CRC-32 as in zlib, PNG and Ethernet (reflected polynomial 0xEDB88320), computed eight bytes at a time with
/// slicing-by-8 tables so that checking a multi-megabyte body costs little in release builds.
///
/// `checksum(of: "123456789")` is 0xCBF43926. The executable may install a faster implementation of the same function
/// (``install(_:)``: zlib's, which core cannot call itself).
public enum DiskCacheCRC32 {
    /// An installed implementation. A class, so that reading it back from the lock hands out the same closure (a
    /// closure kept in a generic container gains a reabstraction thunk each time it is read and written back).
    private final class Implementation: Sendable {
        let update: @Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32

        init(_ update: @escaping @Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32) { self.update = update }
    }

    /// A faster implementation, when one was installed.
    private static let installed = Locked<Implementation?>(nil)

    /// From now on every checksum is computed by `update`, which must extend a CRC-32 (0 for none) with the bytes
    /// given, as ``update(_:with:)`` does.
    public static func install(_ update: @escaping @Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32) {
        let implementation = Implementation(update)
        installed.withLock { $0 = implementation }
    }

    // MARK: - Checksums

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, with: bytes)
    }

    /// The CRC-32 of `bytes`.
    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// Extends `crc`, the CRC-32 of earlier bytes (0 for none), with `bytes`: feeding a body piece by piece gives
    /// the same value as feeding it at once.
    package static func update(_ crc: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard !bytes.isEmpty else { return crc }
        if let installed = installed.withLock({ $0 }) { return installed.update(crc, bytes) }
        return tableUpdate(crc, with: bytes)
    }

    /// ``update(_:with:)`` with the tables here.
    static func tableUpdate(_ crc: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard var pointer = bytes.baseAddress, !bytes.isEmpty else { return crc }
        var remaining = bytes.count
        var value = ~crc
        tables.withUnsafeBufferPointer { tableBuffer in
            let table = tableBuffer.baseAddress!
            while remaining >= 8 {
                let low = UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self)) ^ value
                let high = UInt32(littleEndian: pointer.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                value =
                    table[7 &* 256 &+ Int(low & 0xff)] ^ table[6 &* 256 &+ Int((low >> 8) & 0xff)]
                    ^ table[5 &* 256 &+ Int((low >> 16) & 0xff)] ^ table[4 &* 256 &+ Int(low >> 24)]
                    ^ table[3 &* 256 &+ Int(high & 0xff)] ^ table[2 &* 256 &+ Int((high >> 8) & 0xff)]
                    ^ table[256 &+ Int((high >> 16) & 0xff)] ^ table[Int(high >> 24)]
                pointer += 8
                remaining &-= 8
            }
            while remaining > 0 {
                let byte = UInt32(pointer.load(as: UInt8.self))
                value = table[Int((value ^ byte) & 0xff)] ^ (value >> 8)
                pointer += 1
                remaining &-= 1
            }
        }
        return ~value
    }

    // MARK: - Tables

    /// Eight tables of 256 entries, one after the other: table 0 is the classic byte-at-a-time table, table k gives
    /// the effect of a byte followed by k zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0xEDB8_8320 : value >> 1 }
            tables[index] = value
        }
        for slice in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xff)]
            }
        }
        return tables
    }()
}
