import ImgfsModel

/// Why a variant could not be made. Each case says what `user.imgfs.error` and the log say.
public enum VariantError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The original could not be had: the variant fails as the original does.
    case original(FetchError)
    /// The original's header announces more pixels than `--tune max-pixels` (a decompression bomb); nothing was
    /// decoded.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// Decoding it would hold more memory at once than the decode budget allows (``DecodeBudget``); nothing was
    /// decoded.
    case decodeTooLarge(DecodeCost, budget: Int)
    /// The decoder could not make an image of it (corrupt, truncated, unknown format); the text is the decoder's.
    case undecodable(String)
    /// A vector or document format (SVG, PDF), which imgfs does not rasterize; the text names it.
    case notRaster(String)

    /// One line that says why no variant was made.
    public var description: String {
        switch self {
        case .original(let error): "the original failed: \(error)"
        case .tooManyPixels(let width, let height, let limit):
            "decompression bomb refused: \(width) x \(height) pixels is over the limit of \(limit) (--tune max-pixels)"
        case .decodeTooLarge(let cost, let budget):
            "decode refused: \(cost), over the decode budget of \(Quantity.describe(bytes: budget))"
                + " (the memory budget: --memory-limit, at most an eighth of the memory cgroup's limit)"
        case .undecodable(let reason): "cannot decode the original: \(reason)"
        case .notRaster(let what): "not rasterized: \(what)"
        }
    }
}
