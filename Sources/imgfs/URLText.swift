import ArgumentParser
import Foundation
import ImgfsModel

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

    /// Calls `body` with each of `items`; one that throws is reported on stderr as `imgfs: <item>: <why>` (a
    /// ``NameError`` in these words) and the others still run; exits with status 1 at the end if any threw.
    static func forEach(_ items: [String], _ body: (String) throws -> Void) throws {
        var failed = false
        for item in items {
            do {
                try body(item)
            } catch {
                let why = (error as? NameError).map(describe) ?? "\(error)"
                FileHandle.standardError.write(Data("imgfs: \(item): \(why)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
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
