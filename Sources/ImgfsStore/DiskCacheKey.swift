import ImgfsModel

/// A cache key, 64 lower-case hexadecimal characters, held as its 32 bytes: an index entry then needs no string of
/// its own, and hashing and comparing keys is cheap. Keys order as their text does.
struct DiskCacheKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    private let word0: UInt64
    private let word1: UInt64
    private let word2: UInt64
    private let word3: UInt64

    /// The key written as `text`, or nil when `text` is not 64 lower-case hexadecimal characters.
    init?(_ text: String) {
        var text = text
        guard let key = text.withUTF8({ $0.count == 64 ? DiskCacheKey(hex: $0.baseAddress!) : nil }) else { return nil }
        self = key
    }

    /// The key written in the 64 bytes at `hex`, or nil when they are not all lower-case hexadecimal digits.
    init?(hex: UnsafePointer<UInt8>) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var index = 0
        while index < 64 {
            let byte = hex[index]
            let digit: UInt8
            if byte >= 0x30 && byte <= 0x39 {
                digit = byte &- 0x30
            } else if byte >= 0x61 && byte <= 0x66 {
                digit = byte &- 0x61 &+ 10
            } else {
                return nil
            }
            switch index >> 4 {
            case 0: words.0 = words.0 << 4 | UInt64(digit)
            case 1: words.1 = words.1 << 4 | UInt64(digit)
            case 2: words.2 = words.2 << 4 | UInt64(digit)
            default: words.3 = words.3 << 4 | UInt64(digit)
            }
            index &+= 1
        }
        (word0, word1, word2, word3) = words
    }

    /// The 64-character text of the key.
    var description: String {
        DiskCacheLayout.hex(word0) + DiskCacheLayout.hex(word1) + DiskCacheLayout.hex(word2)
            + DiskCacheLayout.hex(word3)
    }

    /// The name of the key's subdirectory: its first two characters.
    var subdirectoryName: String { DiskCacheLayout.hex(UInt8(truncatingIfNeeded: word0 >> 56)) }

    /// The first byte, whose two hex digits name the subdirectory.
    var firstByte: UInt8 { UInt8(truncatingIfNeeded: word0 >> 56) }

    static func < (lhs: DiskCacheKey, rhs: DiskCacheKey) -> Bool {
        (lhs.word0, lhs.word1, lhs.word2, lhs.word3) < (rhs.word0, rhs.word1, rhs.word2, rhs.word3)
    }
}
