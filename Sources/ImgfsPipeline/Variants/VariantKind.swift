import ImgfsModel

/// Which variant of an image: its shape (`thumb/<px>/`, `thumb/<W>x<H>/`, the whole image under `fmt/<format>/`) and
/// its encoding (nil: chosen from the original when it is made).
///
/// Guarantees: ``token`` is one piece of text without `;`, `/` or spaces, and ``init(token:)`` reads back exactly the
/// kinds it writes; every number in a token or a directory name is range-checked (1 to ``maximumSide``) before use.
/// An integer literal is a downsized variant whose encoding is chosen from the original.
public struct VariantKind: Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// How a variant is sized.
    public enum Shape: Hashable, Sendable, CustomStringConvertible {
        /// Longer side at most this many pixels, never enlarged (`thumb/<px>/`).
        case fit(Int)
        /// Exactly `width` x `height`: scaled to cover it, then cropped (`thumb/<W>x<H>/`).
        case cover(width: Int, height: Int)
        /// The whole image at its own size (`fmt/<format>/`).
        case whole

        /// The name of its directory under `thumb/` (`256`, `224x224`) or `whole`.
        public var description: String {
            switch self {
            case .fit(let side): String(side)
            case .cover(let width, let height): "\(width)x\(height)"
            case .whole: "whole"
            }
        }

        /// The shape a directory name under `thumb/` (`256`, `224x224`, `whole`) stands for, or nil (only canonical
        /// spellings: no sign, no leading zero).
        public init?(_ text: some StringProtocol) {
            if text == "whole" {
                self = .whole
                return
            }
            let parts = text.split(separator: "x", omittingEmptySubsequences: false)
            let sides = parts.map { VariantKind.side(of: $0) }
            guard !sides.contains(nil) else { return nil }
            switch sides.count {
            case 1: self = .fit(sides[0]!)
            case 2: self = .cover(width: sides[0]!, height: sides[1]!)
            default: return nil
            }
        }
    }

    /// The largest side in pixels a shape may name.
    public static let maximumSide = 16384

    /// How it is sized.
    public var shape: Shape
    /// How it is encoded; nil: chosen from the original (JPEG for JPEG, PNG for PNG, WebP for WebP, else PNG with
    /// transparency and JPEG without).
    public var format: VariantFormat?

    /// A variant of `shape` encoded as `format` (nil: chosen from the original).
    public init(_ shape: Shape, format: VariantFormat? = nil) {
        self.shape = shape
        self.format = format
    }

    /// A downsized variant of longer side `value`, encoded as chosen from the original.
    public init(integerLiteral value: Int) {
        self.init(.fit(value))
    }

    /// The shape, then `.` and the format when there is one: `256`, `256.png`, `224x224.jpeg`, `whole.png`.
    public var token: String { format.map { "\(shape).\($0.rawValue)" } ?? shape.description }

    /// The kind a ``token`` names, or nil.
    public init?(token: some StringProtocol) {
        let parts = token.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let shape = Shape(parts[0]) else { return nil }
        if parts.count == 2 {
            guard let format = VariantFormat(rawValue: String(parts[1])) else { return nil }
            self.init(shape, format: format)
        } else {
            self.init(shape)
        }
    }

    /// Where it is found: `thumb/256`, `thumb/224x224`, `fmt/jpeg`.
    public var description: String {
        switch shape {
        case .whole: "fmt/\(format?.rawValue ?? "auto")"
        default: "thumb/\(shape)" + (format.map { " (\($0.rawValue))" } ?? "")
        }
    }

    /// The directory it is listed in: the shape alone under `thumb/`, shape and format under `fmt/`.
    public var directory: VariantKind {
        shape == .whole ? self : VariantKind(shape)
    }

    /// The kind a file name asks for in the directory `directory` (``directory``), from the name's extension: the
    /// extension of the URL's fragment when it has one, else of its path. Under `thumb/` an extension of a format
    /// imgfs writes asks for that format, no image extension leaves the choice to the original, and an image extension
    /// of another format (`.bmp`, `.svg`) asks for what cannot be had: nil. Under `fmt/<format>/` the name may only
    /// have that format's extension or no image extension.
    public static func named(_ url: ImageURL, in directory: VariantKind) -> VariantKind? {
        kind(asked: requestedFormat(url), in: directory)
    }

    /// The kind a plain file name (a list entry's `00001-photo.avif`, without fragment) asks for in `directory`, by
    /// its extension, with the rules of ``named(_:in:)``.
    public static func named(fileName: some StringProtocol, in directory: VariantKind) -> VariantKind? {
        kind(asked: requestedFormat(inName: Substring(fileName)) ?? .unnamed, in: directory)
    }

    private static func kind(asked named: RequestedFormat, in directory: VariantKind) -> VariantKind? {
        switch directory.shape {
        case .whole:
            switch named {
            case .unnamed: return directory
            case .format(let format): return format == directory.format ? directory : nil
            case .unwritable: return nil
            }
        case .fit, .cover:
            switch named {
            case .unnamed: return VariantKind(directory.shape)
            case .format(let format): return VariantKind(directory.shape, format: format)
            case .unwritable: return nil
            }
        }
    }

    /// What a name's extension says of the encoding.
    package enum RequestedFormat: Equatable {
        /// No image extension.
        case unnamed
        /// A format imgfs writes.
        case format(VariantFormat)
        /// An image format imgfs does not write.
        case unwritable
    }

    /// The extension of the fragment when it has one, else of the path's last segment (query left out).
    static func requestedFormat(_ url: ImageURL) -> RequestedFormat {
        let text = url.string
        var candidates: [Substring] = []
        if let hash = text.firstIndex(of: "#") { candidates.append(text[text.index(after: hash)...]) }
        let resource = url.resourceKey
        let path = resource.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        candidates.append(path.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        return candidates.lazy.compactMap { requestedFormat(inName: $0) }.first ?? .unnamed
    }

    /// What the extension of `name` asks for; nil when it has none.
    package static func requestedFormat(inName name: Substring) -> RequestedFormat? {
        guard let dot = name.lastIndex(of: "."), !name[dot...].contains("/") else { return nil }
        let ext = name[name.index(after: dot)...].lowercased()
        if let format = VariantFormat(fileExtension: ext) { return .format(format) }
        if unwritableImageExtensions.contains(ext) { return .unwritable }
        return .unnamed
    }

    /// Extensions of image formats imgfs reads but does not write.
    static let unwritableImageExtensions: Set<String> = [
        "bmp", "ico", "svg", "svgz", "jxl", "jp2", "j2k", "jpx", "pdf", "psd", "tga", "pbm", "pgm", "ppm", "pnm", "exr",
        "hdr", "apng"
    ]

    /// A side of 1 to ``maximumSide`` pixels in canonical decimal, or nil.
    static func side(of text: some StringProtocol) -> Int? {
        guard text.count <= 5, let value = Int(text), String(value) == text, (1...maximumSide).contains(value) else {
            return nil
        }
        return value
    }
}
