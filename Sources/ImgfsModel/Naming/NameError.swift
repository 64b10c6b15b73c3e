/// Why a file name under `img/` does not name a fetchable image. Nothing is fetched for such a name.
public enum NameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A `%` not followed by two hexadecimal digits, at this byte offset of the name.
    case invalidPercentEscape(offset: Int)
    /// The decoded bytes are not UTF-8 text.
    case notUTF8
    /// A NUL or other control character (0x00-0x1F, 0x7F) appears in the decoded URL.
    case forbiddenCharacter(UInt8)
    /// The name decodes to something that is not an absolute URL.
    case notAURL
    /// The URL's scheme is not http or https.
    case unsupportedScheme(String)
    /// The URL has no host.
    case missingHost
    /// The URL's port is not a number from 1 to 65535.
    case invalidPort
    /// The URL carries credentials (`user:pass@host`); imgfs refuses to send them.
    case credentials
    /// The URL is longer than ``ImageURL/maximumLength`` bytes.
    case tooLong(Int)
    /// A long-URL name (`~<sha256>`) that no URL has been registered under.
    case unknownDigest

    /// One line that says why the name was refused.
    public var description: String {
        switch self {
        case .invalidPercentEscape(let offset): "invalid percent escape at byte \(offset) of the name"
        case .notUTF8: "the decoded URL is not UTF-8 text"
        case .forbiddenCharacter(let byte): "the decoded URL contains the forbidden byte 0x\(String(byte, radix: 16))"
        case .notAURL: "the name is not a percent-encoded absolute URL"
        case .unsupportedScheme(let scheme): "the scheme \"\(scheme)\" is not supported (only http and https)"
        case .missingHost: "the URL has no host"
        case .invalidPort: "the URL's port is not a number from 1 to 65535"
        case .credentials: "URLs with credentials (user:password@) are refused"
        case .tooLong(let length): "the URL is \(length) bytes long; the limit is \(ImageURL.maximumLength)"
        case .unknownDigest: "no URL is registered under this long-URL name; run `imgfs path URL` to register it"
        }
    }
}
