import ImgfsCore

/// How the command line words a line that is not a URL imgfs can name: "not a URL" for text that is not one at all,
/// the name error's own words otherwise.
enum URLText {
    /// Why `error` made a command-line argument or list line unusable.
    static func describe(_ error: NameError) -> String {
        switch error {
        case .notAURL, .missingHost: "not a URL (an http or https URL was expected)"
        case .unsupportedScheme(let scheme): "not an http or https URL (the scheme is \"\(scheme)\")"
        default: error.description
        }
    }

    /// Why `text` is not a URL imgfs can name ("" when it is one).
    static func problem(_ text: String) -> String {
        do throws(NameError) {
            _ = try ImageURL(text)
            return ""
        } catch {
            return describe(error)
        }
    }
}
