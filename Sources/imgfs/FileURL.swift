import ImgfsModel

/// `file://` URLs for paths in a mount, as browsers need them.
///
/// A browser decodes the escapes of a `file://` URL before it opens the file, so the `%2F` of an encoded name would
/// become `/`: every byte of the path but the unreserved characters and `/` is percent-encoded, `%` itself as `%25`.
enum FileURL {
    /// `file://` and the percent-encoded absolute `path`.
    static func string(forPath path: String) -> String {
        "file://"
            + path.split(separator: "/", omittingEmptySubsequences: false)
            .map { NameCodec.encode(String($0)) }.joined(separator: "/")
    }
}
