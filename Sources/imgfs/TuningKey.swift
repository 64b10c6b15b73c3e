import Foundation
import ImgfsModel

/// One `--tune` key: its name, its default as documented, what it does, and how it reads a value.
///
/// Guarantees: ``apply`` changes the tuning only for a value in the key's range (described by ``expected``) and
/// returns whether it did.
struct TuningKey {
    let name: String
    let defaultValue: String
    let summary: String
    let expected: String
    let apply: (inout Tuning, String) -> Bool

    /// A whole number in `range`.
    static func number(
        _ name: String, _ path: WritableKeyPath<Tuning, Int>, _ range: ClosedRange<Int>, default value: String,
        _ summary: String
    ) -> TuningKey {
        TuningKey(
            name: name, defaultValue: value, summary: summary,
            expected: "a whole number from \(range.lowerBound) to \(range.upperBound)"
        ) { tuning, text in
            guard let number = Int(text), range.contains(number) else { return false }
            tuning[keyPath: path] = number
            return true
        }
    }

    /// A duration (`500ms`, `10s`, `2m`; a plain number is seconds) from `minimum` seconds to 7 days.
    static func duration(
        _ name: String, _ path: WritableKeyPath<Tuning, TimeInterval>, atLeast minimum: TimeInterval,
        default value: String, _ summary: String
    ) -> TuningKey {
        let least = minimum < 1 ? "\(Int(minimum * 1000))ms" : "\(Int(minimum))s"
        return TuningKey(
            name: name, defaultValue: value, summary: summary,
            expected: "a duration from \(least) to 7d (e.g. 500ms, 10s, 2m)"
        ) { tuning, text in
            guard let seconds = Quantity.seconds(text), seconds >= minimum, seconds <= 7 * 24 * 3600 else {
                return false
            }
            tuning[keyPath: path] = seconds
            return true
        }
    }

    /// A size (`64M`, `1G`, bytes when plain) above 0.
    static func size(
        _ name: String, _ path: WritableKeyPath<Tuning, Int>, default value: String, _ summary: String
    ) -> TuningKey {
        TuningKey(name: name, defaultValue: value, summary: summary, expected: "a size above 0 (e.g. 64M)") {
            tuning, text in
            guard let bytes = Quantity.bytes(text), bytes > 0 else { return false }
            tuning[keyPath: path] = bytes
            return true
        }
    }

    /// `on` or `off`.
    static func toggle(
        _ name: String, _ path: WritableKeyPath<Tuning, Bool>, default value: String, _ summary: String
    ) -> TuningKey {
        TuningKey(name: name, defaultValue: value, summary: summary, expected: "on or off") { tuning, text in
            guard let on = ["on": true, "off": false][text.lowercased()] else { return false }
            tuning[keyPath: path] = on
            return true
        }
    }
}
