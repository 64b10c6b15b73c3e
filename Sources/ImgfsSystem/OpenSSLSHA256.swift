import Glibc
import ImgfsModel

/// OpenSSL's SHA-256 compression (`SHA256_Transform`), found at run time in the process (libcurl links libcrypto),
/// which uses the processor's SHA instructions where it has them: several times faster than
/// ``ImgfsModel/SHA256``'s own.
///
/// Guarantees: ``compress`` is nil unless the function was found and, installed in a fresh digest, gives the standard
/// digests of a short and a multi-block message; it applies each 64-byte block in turn to the eight state words, as
/// ``ImgfsModel/SHA256/install(_:)`` requires.
public enum OpenSSLSHA256 {
    private typealias Function = @convention(c) (UnsafeMutableRawPointer, UnsafePointer<UInt8>) -> Void

    /// `SHA256_CTX`: eight state words, then the length, the pending block and counters (112 bytes in OpenSSL 1.1
    /// and 3); only the state words are read and written here.
    private static let contextSize = 112

    /// The compression function, or nil when OpenSSL is not in the process or disagrees with the standard.
    public static let compress: SHA256.Compression? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "SHA256_Transform") else { return nil }
        let function = unsafeBitCast(symbol, to: Function.self)
        let compress: SHA256.Compression = { state, blocks in
            guard let base = blocks.baseAddress?.assumingMemoryBound(to: UInt8.self), blocks.count >= 64 else {
                return
            }
            withUnsafeTemporaryAllocation(byteCount: contextSize, alignment: 16) { context in
                context.initializeMemory(as: UInt8.self, repeating: 0)
                let words = context.baseAddress!.assumingMemoryBound(to: UInt32.self)
                words.update(from: state, count: 8)
                for offset in stride(from: 0, to: blocks.count - 63, by: 64) {
                    function(context.baseAddress!, base + offset)
                }
                state.update(from: words, count: 8)
            }
        }
        return verified(compress) ? compress : nil
    }()

    /// Whether `compress`, run from the initial state over a padded message by hand, gives the SHA-256 of "abc"
    /// (FIPS 180-4's example, one block) and of 1,000 bytes `a` (16 blocks, the length of a run it is used for).
    private static func verified(_ compress: @escaping SHA256.Compression) -> Bool {
        let expected = [
            ("abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("a", 1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
        ]
        return expected.allSatisfy { text, repeats, digest in
            let message = Array(repeating: Array(text.utf8), count: repeats).flatMap { $0 }
            var padded = message + [0x80]
            padded += [UInt8](repeating: 0, count: (64 - (padded.count + 8) % 64) % 64)
            padded += withUnsafeBytes(of: (UInt64(message.count) * 8).bigEndian) { Array($0) }
            var words: [UInt32] = [
                0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
            ]
            padded.withUnsafeBytes { blocks in
                words.withUnsafeMutableBufferPointer { compress($0.baseAddress!, blocks) }
            }
            let hex = words.map { word in
                let digits = String(word, radix: 16)
                return String(repeating: "0", count: 8 - digits.count) + digits
            }
            return hex.joined() == digest
        }
    }
}
