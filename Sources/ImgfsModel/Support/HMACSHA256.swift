/// HMAC-SHA-256 (RFC 2104 over ``SHA256``): a message authentication code under a secret key.
///
/// Guarantees: `finish()` is `H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ message))` with the key zero-padded to SHA-256's
/// 64-byte block (a longer key is hashed first), as RFC 2104 and RFC 4231 define it; a value keeps the key's padded
/// blocks, so one keyed value can be copied and fed many messages. ``matches(_:_:)`` compares codes in time that does
/// not depend on where they differ.
public struct HMACSHA256: Sendable {
    /// The inner hash, fed `K ⊕ ipad` and the message so far.
    private var inner = SHA256()
    /// `K ⊕ opad`.
    private let outerPad: [UInt8]

    /// A code under `key` (any length; the empty key is allowed).
    public init(key: [UInt8]) {
        var block = key
        if block.count > 64 {
            var hash = SHA256()
            hash.update(block)
            block = hash.finish()
        }
        block += [UInt8](repeating: 0, count: 64 - block.count)
        inner.update(block.map { $0 ^ 0x36 })
        outerPad = block.map { $0 ^ 0x5c }
    }

    /// Feeds more of the message.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        inner.update(bytes)
    }

    /// Feeds the bytes of `buffer`.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        inner.update(buffer)
    }

    /// The 32-byte code of the message fed so far.
    public func finish() -> [UInt8] {
        var outer = SHA256()
        outer.update(outerPad)
        outer.update(inner.finish())
        return outer.finish()
    }

    /// The code of `message` under `key`.
    public static func code(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var mac = HMACSHA256(key: key)
        mac.update(message)
        return mac.finish()
    }

    /// Whether two codes are equal, looking at every byte whatever the first difference.
    public static func matches<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
