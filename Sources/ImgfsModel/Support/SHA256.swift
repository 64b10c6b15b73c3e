/// SHA-256 (FIPS 180-4) of a byte sequence, written out so the core needs no crypto library.
///
/// Used to name long URLs and cache entries, and under HMAC (``HMACSHA256``) to seal the shared tier's values.
/// `SHA256.hex(of:)` gives the 64-character lower-case digest. The executable may install a faster compression
/// function (``install(_:)``: OpenSSL's, which uses the processor's SHA instructions), used for runs of at least
/// ``installedMinimumBlocks`` blocks.
public struct SHA256: Sendable {
    /// A compression function: applies `blocks` (a whole number of 64-byte blocks) to the eight state words.
    public typealias Compression = @Sendable (UnsafeMutablePointer<UInt32>, UnsafeRawBufferPointer) -> Void

    /// An installed implementation (a class, so that reading it back hands out the same closure).
    private final class Implementation: Sendable {
        let compress: Compression

        init(_ compress: @escaping Compression) { self.compress = compress }
    }

    private static let installed = Locked<Implementation?>(nil)
    /// Shorter runs are compressed here (asking for the installed function costs a lock).
    public static let installedMinimumBlocks = 16

    /// From now on runs of blocks are compressed by `compress`, which must do what the FIPS 180-4 compression
    /// function does to each block in turn.
    public static func install(_ compress: @escaping Compression) {
        let implementation = Implementation(compress)
        installed.withLock { $0 = implementation }
    }

    private var state: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    ]
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// A hash of no bytes yet.
    public init() { pending.reserveCapacity(64) }

    /// Feeds more bytes.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if let done = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) { return done }
        let array = Array(bytes)
        array.withUnsafeBytes { update($0) }
    }

    /// Feeds the bytes of `buffer`.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        length &+= UInt64(buffer.count)
        var rest = buffer[...]
        if !pending.isEmpty {
            let take = min(64 - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let blocks = rest.count / 64
        if blocks >= Self.installedMinimumBlocks, let implementation = Self.installed.withLock({ $0 }) {
            let run = UnsafeRawBufferPointer(rebasing: rest.prefix(blocks * 64))
            state.withUnsafeMutableBufferPointer { implementation.compress($0.baseAddress!, run) }
            rest = rest.dropFirst(blocks * 64)
        }
        while rest.count >= 64 {
            compress(UnsafeRawBufferPointer(rebasing: rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        pending.append(contentsOf: rest)
    }

    /// The 32-byte digest of everything fed so far.
    public func finish() -> [UInt8] {
        let words = finalState()
        return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            for (index, word) in words.enumerated() {
                for byte in 0..<4 { out[4 * index + byte] = UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * byte)) }
            }
            count = 32
        }
    }

    /// The state words after the padding and the length are fed (the digest, big-endian word by word).
    private func finalState() -> [UInt32] {
        var copy = self
        let bitLength = length &* 8
        // The pending bytes, 0x80, zeros up to 56 mod 64, and the length: one block or two.
        let total = pending.count < 56 ? 64 : 128
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: total) { tail in
            tail.initialize(repeating: 0)
            for (index, byte) in pending.enumerated() { tail[index] = byte }
            tail[pending.count] = 0x80
            for index in 0..<8 { tail[total - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * index)) }
            let bytes = UnsafeRawBufferPointer(tail)
            for start in stride(from: 0, to: total, by: 64) {
                copy.compress(UnsafeRawBufferPointer(rebasing: bytes[start..<start + 64]))
            }
        }
        return copy.state
    }

    /// The lower-case hexadecimal digest of `bytes`.
    public static func hex<Bytes: Sequence>(of bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var hash = SHA256()
        hash.update(bytes)
        let words = hash.finalState()
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 64) { out in
            digits.withUTF8Buffer { digits in
                for (index, word) in words.enumerated() {
                    for nibble in 0..<8 {
                        out[8 * index + nibble] = digits[Int(word >> UInt32(28 - 4 * nibble) & 0x0f)]
                    }
                }
            }
            return 64
        }
    }

    // MARK: - Compression function

    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
    ]

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { words in
            for i in 0..<16 {
                words[i] =
                    UInt32(block[4 * i]) << 24 | UInt32(block[4 * i + 1]) << 16 | UInt32(block[4 * i + 2]) << 8
                    | UInt32(block[4 * i + 3])
            }
            for i in 16..<64 {
                let s0 = rotr(words[i - 15], 7) ^ rotr(words[i - 15], 18) ^ (words[i - 15] >> 3)
                let s1 = rotr(words[i - 2], 17) ^ rotr(words[i - 2], 19) ^ (words[i - 2] >> 10)
                words[i] = words[i - 16] &+ s0 &+ words[i - 7] &+ s1
            }
            state.withUnsafeMutableBufferPointer { state in
                Self.roundConstants.withUnsafeBufferPointer { constants in
                    var (a, b, c, d) = (state[0], state[1], state[2], state[3])
                    var (e, f, g, h) = (state[4], state[5], state[6], state[7])
                    for i in 0..<64 {
                        let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                        let choice = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ choice &+ constants[i] &+ words[i]
                        let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = s0 &+ majority
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                    }
                    state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
                    state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
                }
            }
        }
    }
}

@inline(__always)
private func rotr(_ value: UInt32, _ count: UInt32) -> UInt32 { value >> count | value << (32 - count) }
