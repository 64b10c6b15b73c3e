import ArgumentParser
import Foundation
import ImgfsModel

/// The values of `imgfs mount` options that are parsed after ArgumentParser: one parser and one message per kind.
enum OptionValue {
    /// The duration `text` of `option` in seconds (`90`, `90s`, `500ms`, `2m`, `7d`: ``Quantity/seconds(_:)``), or a
    /// validation error naming the option.
    static func duration(_ text: String, _ option: String) throws -> TimeInterval {
        guard let value = Quantity.seconds(text) else { throw ValidationError("\(option): not a duration: \(text)") }
        return value
    }
}
