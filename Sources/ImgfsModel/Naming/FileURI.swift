/// `file://` URIs of paths exactly as GLib's `g_filename_to_uri` builds them: what GIO, Nautilus, Thunar and pcmanfm
/// hash (MD5) to name a thumbnail and compare with its `Thumb::URI`.
///
/// Guarantees: every byte of the path other than ASCII letters, digits and `!$&'()*+,-./:=@_~` is written `%XX`
/// (upper-case hex), so `%` becomes `%25`, a space `%20`, `#` `%23`, `?` `%3F` and each byte of a non-ASCII
/// character its own escape (measured against GLib 2.74's `g_filename_to_uri`); no path is ever refused.
public enum FileURI {
    /// The bytes GLib leaves as they are in the path of a `file://` URI.
    static let unescaped: Set<UInt8> = Set(
        Array("!$&'()*+,-./:=@_~".utf8) + Array(UInt8(ascii: "0")...UInt8(ascii: "9"))
            + Array(UInt8(ascii: "A")...UInt8(ascii: "Z")) + Array(UInt8(ascii: "a")...UInt8(ascii: "z")))

    /// `file://` and the absolute path `path`, escaped as GLib does.
    public static func string(forAbsolutePath path: String) -> String {
        "file://" + escape(Array(path.utf8))
    }

    /// `bytes` (a path or a file name) escaped as GLib escapes the path of a `file://` URI.
    public static func escape(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if unescaped.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
