import Foundation

/// Conversions of numbers that came from outside (HTTP heads, Redis values, list and policy files) into integers.
///
/// Guarantees: never traps. `Int(someDouble)` traps on NaN, infinities and values beyond `Int`'s range; every
/// conversion of an outside number goes through here (or through a range check of its own) instead.
extension Int {
    /// `value` rounded toward zero and clamped to `Int.min...Int.max`; NaN gives 0.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 9.223_372_036_854_775_807e18 {
            self = .max
        } else if value <= -9.223_372_036_854_775_808e18 {
            self = .min
        } else {
            self = Int(value)
        }
    }
}

/// HTTP's `delta-seconds` (RFC 9111 §1.2.2), as `max-age`, `Age` and `Retry-After` carry them.
public enum DeltaSeconds {
    /// The largest value a cache has to represent: larger ones (and ones that overflow) count as this.
    public static let maximum = 2_147_483_648

    /// The seconds in `text` (one or more ASCII digits, nothing else), at most ``maximum``; nil otherwise.
    public static func parse<Text: StringProtocol>(_ text: Text) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = Swift.min(maximum, value * 10 + Int(byte - 0x30))
        }
        return value
    }
}

/// The dates imgfs accepts from outside (HTTP dates, stored records): finite, from 1970 up to year 9999.
public enum PlausibleDate {
    /// 9999-12-31T23:59:59Z.
    public static let latest = Date(timeIntervalSince1970: 253_402_300_799)

    /// Whether `date` is in 1970...9999.
    public static func contains(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSince1970
        return seconds.isFinite && seconds >= 0 && date <= latest
    }

    /// `date` when it is plausible, nil otherwise.
    public static func check(_ date: Date?) -> Date? {
        date.flatMap { contains($0) ? $0 : nil }
    }
}
