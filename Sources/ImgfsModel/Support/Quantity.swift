import Foundation

/// Parsing of the sizes and durations options and policy files take.
///
/// Guarantees: a size is at most ``maximumBytes`` and a duration at most ``maximumSeconds``; anything larger, and
/// anything that is not a finite number, is nil (an error for the caller), never a value that traps later.
public enum Quantity {
    /// The largest size accepted: 1 EiB.
    public static let maximumBytes = 1 << 60
    /// The largest duration accepted: 100 years.
    public static let maximumSeconds = 100 * 366 * 86400.0

    /// Bytes from `512`, `64K`, `256M`, `1G`, `1.5G` (suffixes are powers of 1024; `KiB`, `MB` and the like are
    /// accepted too), or nil.
    public static func bytes(_ text: String) -> Int? {
        let (number, unit) = split(text)
        var key = unit.lowercased()
        for suffix in ["ib", "b"] where key.hasSuffix(suffix) && key.count > suffix.count - 1 {
            key.removeLast(suffix.count)
            break
        }
        let exponents: [String: Double] = ["": 0, "k": 1, "m": 2, "g": 3, "t": 4]
        guard let value = number, value >= 0, let exponent = exponents[key] else { return nil }
        let bytes = value * pow(1024, exponent)
        guard bytes.isFinite, bytes <= Double(maximumBytes) else { return nil }
        return Int(bytes)
    }

    /// Seconds from `90`, `90s`, `250ms`, `30m`, `24h`, `7d`, or nil.
    public static func seconds(_ text: String) -> Double? {
        let (number, unit) = split(text)
        let factors: [String: Double] = ["": 1, "s": 1, "ms": 0.001, "m": 60, "h": 3600, "d": 86400]
        guard let value = number, value >= 0, let factor = factors[unit.lowercased()] else { return nil }
        let seconds = value * factor
        return seconds.isFinite && seconds <= maximumSeconds ? seconds : nil
    }

    /// `bytes` for people: `1.5 MiB`.
    public static func describe(bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var index = 0
        while value >= 1024 && index < units.count - 1 {
            value /= 1024
            index += 1
        }
        return index == 0 ? "\(bytes) B" : "\((value * 10).rounded() / 10) \(units[index])"
    }

    private static func split(_ text: String) -> (Double?, String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isNumber || $0 == "." }
        return (Double(digits), String(trimmed.dropFirst(digits.count)).trimmingCharacters(in: .whitespaces))
    }
}
