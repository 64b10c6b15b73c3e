/// The standard check of a CRC-32 implementation (the CRC-32 of zlib, PNG and Ethernet): the checksum of
/// "123456789" is 0xCBF43926.
enum CRC32CheckValue {
    /// `update`, if it gives the standard check value; nil otherwise.
    static func verified(
        _ update: @escaping @Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32
    ) -> (@Sendable (UInt32, UnsafeRawBufferPointer) -> UInt32)? {
        Array("123456789".utf8).withUnsafeBytes { update(0, $0) } == 0xCBF4_3926 ? update : nil
    }
}
