import Foundation

/// Parsing of the sizes and durations options take.
public enum Quantity {
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
        return Int(saturating: value * pow(1024, exponent))
    }

    /// Seconds from `90`, `90s`, `30m`, `24h`, `7d`, or nil.
    public static func seconds(_ text: String) -> Double? {
        let (number, unit) = split(text)
        let factors: [String: Double] = ["": 1, "s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let value = number, value >= 0, let factor = factors[unit.lowercased()] else { return nil }
        return value * factor
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
