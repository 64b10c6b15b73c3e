import ImgfsModel

/// The fleet key (`--shared-cache-key-file`) and what it does to every value of the shared tier: each is stored
/// followed by a 32-byte HMAC-SHA-256 of the key it is stored under and the value, so that only a writer holding the
/// key can make a value a reader accepts, and a value copied to another key (another URL, fetch, piece index or
/// credentials scope) is refused as well.
///
/// Guarantees: ``open(_:key:)`` gives the payload only when its code matches under this fleet key (compared in
/// constant time); nothing else is ever read from a value. Without a key file the fleet key is empty: values are then
/// still checked for integrity, but anyone who can write to the store can make values every mount accepts (the
/// mount says so at start).
public struct SharedTierSeal: Sendable {
    /// The length of the code after each value.
    public static let codeLength = 32
    /// Whether a fleet key was given (else the empty key is used).
    public let isKeyed: Bool
    private let keyed: HMACSHA256

    /// A seal under `key` (the key file's bytes; empty: no key).
    public init(key: [UInt8] = []) {
        isKeyed = !key.isEmpty
        keyed = HMACSHA256(key: key)
    }

    /// The HMAC (hex) of `text` under the fleet key: names what must not be guessable from the store's keys.
    public func digest(_ text: String) -> String {
        var mac = keyed
        mac.update(Array(text.utf8))
        return mac.finish().map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// `payload` followed by its code for the store key `key`.
    public func seal(_ payload: [UInt8], key: String) -> [UInt8] {
        payload + code(payload[...], key: key)
    }

    /// The payload of `value` stored under `key`, or nil when its code does not match.
    public func open(_ value: [UInt8], key: String) -> ArraySlice<UInt8>? {
        guard value.count >= Self.codeLength else { return nil }
        let payload = value[..<(value.count - Self.codeLength)]
        let stored = value[(value.count - Self.codeLength)...]
        return HMACSHA256.matches(code(payload, key: key), stored) ? payload : nil
    }

    /// The HMAC of `imgfs:v2`, the store key and the payload, each part preceded by its length.
    private func code(_ payload: ArraySlice<UInt8>, key: String) -> [UInt8] {
        var mac = keyed
        for part in [Array(SharedTierKeys.namespace.utf8), Array(key.utf8)] {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { mac.update($0) }
            mac.update(part)
        }
        withUnsafeBytes(of: UInt64(payload.count).bigEndian) { mac.update($0) }
        payload.withUnsafeBytes { mac.update($0) }
        return mac.finish()
    }
}
