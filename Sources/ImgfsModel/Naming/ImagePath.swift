/// The long-URL scheme: how any http(s) URL up to ``ImageURL/maximumLength`` bytes gets a path that every program
/// can open, with each component at most 255 bytes and the whole path under `PATH_MAX` (4096).
///
/// Three forms, the first that fits is used (see docs/SEMANTICS.md):
/// - plain: `img/<encoded>` when the encoded URL fits in one 255-byte component;
/// - chunked: `img/+/<c1>+/<c2>+/…/<cN>`: the encoded URL cut into 254-byte pieces, every piece but the last followed
///   by a `+` (which the encoder never leaves unescaped); stateless, used when the whole path fits;
/// - digest: `img/~<sha256 of the URL>`: a short name that the mount resolves from its registry; `imgfs path`
///   registers the URL first by walking the chunked form one directory at a time, which no path limit applies to.
public enum ImagePath {
    /// The directory, under the mount root, that holds the images.
    public static let imagesDirectory = "img"
    /// The directory, under ``imagesDirectory``, that starts a chunked name.
    public static let chunkDirectory = "+"
    /// What starts a digest name.
    public static let digestPrefix = "~"
    /// The longest file-name component the scheme produces.
    public static let componentLimit = 255
    /// The longest path the scheme produces, in bytes (PATH_MAX less its terminating NUL).
    public static let pathLimit = 4095
    /// Room left for the mount point when the path is printed relative to it.
    public static let assumedMountPointLength = 512

    /// One of the three forms.
    public enum Form: Equatable, Sendable {
        case plain(name: String)
        case chunked(chunks: [String])
        case digest(name: String, chunks: [String])

        /// The path relative to the mount root.
        public var relativePath: String {
            switch self {
            case .plain(let name), .digest(let name, _): "\(ImagePath.imagesDirectory)/\(name)"
            case .chunked(let chunks):
                ([ImagePath.imagesDirectory, ImagePath.chunkDirectory] + chunks).joined(separator: "/")
            }
        }
    }

    /// The form to use for `url`. `mountPointLength` is the byte length of the mount point the path will be joined to,
    /// or nil when unknown (then ``assumedMountPointLength`` is reserved).
    public static func form(for url: ImageURL, mountPointLength: Int? = nil) -> Form {
        let encoded = NameCodec.encode(url.string)
        if encoded.utf8.count <= componentLimit { return .plain(name: encoded) }
        let pieces = chunks(of: encoded)
        let chunked = Form.chunked(chunks: pieces)
        let budget = pathLimit - (mountPointLength.map { $0 + 1 } ?? assumedMountPointLength)
        if chunked.relativePath.utf8.count <= budget { return chunked }
        return .digest(name: digestName(for: url), chunks: pieces)
    }

    /// The encoded URL cut into components: 254 bytes and a `+` each, the last one without the `+`.
    public static func chunks(of encoded: String) -> [String] {
        let bytes = Array(encoded.utf8)
        let size = componentLimit - 1
        return stride(from: 0, to: bytes.count, by: size).map { start in
            let end = min(start + size, bytes.count)
            let piece = String(decoding: bytes[start..<end], as: UTF8.self)
            return end < bytes.count ? piece + "+" : piece
        }
    }

    /// `~` followed by the SHA-256 of the URL text, in lower-case hex.
    public static func digestName(for url: ImageURL) -> String {
        digestPrefix + SHA256.hex(of: url.string.utf8)
    }

    /// Whether `name` has the shape of a digest name.
    public static func isDigestName<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        name.count == 65 && name.first == UInt8(ascii: "~")
            && name.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// Whether a component of a chunked name continues (ends with `+`) rather than ends the URL.
    public static func isContinuation<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        name.count > 1 && name.reversed().first == UInt8(ascii: "+")
    }
}
