import Foundation
import ImgfsModel

/// Where a batch of transfers stands (such as `imgfs prefetch` warming a cache), and its two textual forms: the line
/// a terminal redraws in place while the batch runs, and the summary line printed at the end.
///
/// A pure value: it reads no clock and writes nothing, so what it prints follows from its fields alone.
struct ProgressLine: Equatable, Sendable {
    /// How many items the batch holds.
    var total: Int
    /// How many items have finished, successfully or not.
    var done: Int
    /// How many of the finished items failed.
    var failed: Int
    /// Bytes transferred so far.
    var bytes: Int
    /// Seconds since the batch started.
    var seconds: Double
    /// What the bar and the ETA measure.
    var pace: Pace

    /// What the bar and the ETA measure.
    enum Pace: Equatable, Sendable {
        /// Items: each costs about the same (probes that wait for response heads).
        case items
        /// Bytes: `expected` is the bytes of the whole batch once every item not finished has a known size, nil
        /// before; the ETA is then unknown (item counts say nothing of the bytes still to come).
        case bytes(expected: Int?)
    }

    /// The width of the bar, in characters, when the line has room for it.
    static let barWidth = 24
    /// The narrowest bar worth drawing; with less room the line goes without one.
    static let minimumBarWidth = 5

    /// A batch of `total` items of which `done` have finished (`failed` of them unsuccessfully) after `seconds`,
    /// having transferred `bytes`.
    init(total: Int, done: Int = 0, failed: Int = 0, bytes: Int = 0, seconds: Double = 0, pace: Pace = .items) {
        self.total = total
        self.done = done
        self.failed = failed
        self.bytes = bytes
        self.seconds = seconds
        self.pace = pace
    }

    /// How many items finished successfully.
    var succeeded: Int { max(done - failed, 0) }

    /// The part of the batch finished, from 0 to 1 (1 for an empty batch): by bytes when they are all known, else by
    /// items.
    var fraction: Double {
        if case .bytes(let expected?) = pace, expected > 0, done < total {
            return min(max(Double(bytes) / Double(expected), 0), 1)
        }
        return total > 0 ? min(max(Double(done) / Double(total), 0), 1) : 1
    }

    /// Bytes per second over the whole batch so far (0 before any time has passed).
    var bytesPerSecond: Double {
        seconds > 0 ? Double(bytes) / seconds : 0
    }

    /// Seconds until the batch ends at the pace so far: of the bytes still expected at the byte rate so far, or of
    /// the items left at the item rate so far; nil when unknown (no pace yet, or bytes not all known).
    var remainingSeconds: Double? {
        if done >= total { return 0 }
        switch pace {
        case .items:
            guard done > 0, seconds > 0 else { return nil }
            return seconds / Double(done) * Double(max(total - done, 0))
        case .bytes(let expected):
            guard let expected, bytesPerSecond > 0 else { return nil }
            return Double(max(expected - bytes, 0)) / bytesPerSecond
        }
    }

    /// The bytes so far, and of how many when the batch's bytes are known: `3.1 MiB of 28.0 MiB`.
    private var byteText: String {
        guard case .bytes(let expected?) = pace else { return Quantity.describe(bytes: bytes) }
        return "\(Quantity.describe(bytes: bytes)) of \(Quantity.describe(bytes: expected))"
    }

    /// `ETA 0:07`; `ETA unknown` when the bytes still to come are not known; `ETA --:--` before an item finished.
    private var etaText: String {
        if let remainingSeconds { return "ETA \(Self.clock(remainingSeconds))" }
        if case .bytes = pace { return "ETA unknown" }
        return "ETA --:--"
    }

    /// The line to redraw in place, at most `columns - 1` characters (so that it never wraps), e.g.
    /// `[##########--------------]  42/100  3.1 MiB of 7.4 MiB  1.25 MiB/s  ETA 0:04  2 failed`.
    /// The bar narrows, then goes, then the text is cut when the terminal is narrow.
    func rendered(columns: Int = 80) -> String {
        let counts = "\(done)/\(total)"
        let text = [
            counts, byteText, Self.rate(bytesPerSecond), etaText, "\(failed) failed"
        ].joined(separator: "  ")
        let room = columns - 1
        let barRoom = min(Self.barWidth, room - text.count - 4)
        let line = barRoom >= Self.minimumBarWidth ? "\(Self.bar(fraction, width: barRoom))  \(text)" : text
        return String(line.prefix(max(room, 0)))
    }

    /// The line that ends the batch, e.g. `prefetched 98 of 100 images (12.50 MiB in 3.2 s, 3.91 MiB/s), 2 failed`.
    var summary: String {
        let mebibytes = Self.fixed(Double(bytes) / 1_048_576, decimals: 2)
        let rate = Self.fixed(bytesPerSecond / 1_048_576, decimals: 2)
        return "prefetched \(succeeded) of \(total) images (\(mebibytes) MiB in \(Self.fixed(seconds, decimals: 1)) s, "
            + "\(rate) MiB/s), \(failed) failed"
    }

    /// A bar of `width` characters: `[`, `#` for the part done, `-` for the rest, `]`.
    static func bar(_ fraction: Double, width: Int) -> String {
        let inside = max(width - 2, 0)
        let filled = min(max(Int((fraction * Double(inside)).rounded(.down)), 0), inside)
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: inside - filled) + "]"
    }

    /// A duration as a clock: `0:07`, `12:34`, `1:02:03`; rounded up to whole seconds.
    static func clock(_ seconds: Double) -> String {
        let whole = seconds.isFinite ? Int(max(seconds, 0).rounded(.up)) : 0
        let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" : "\(minutes):\(twoDigits(secs))"
    }

    /// A rate in MiB/s with two decimals: `1.25 MiB/s`.
    static func rate(_ bytesPerSecond: Double) -> String {
        "\(fixed(bytesPerSecond / 1_048_576, decimals: 2)) MiB/s"
    }

    /// `value` with exactly `decimals` digits after the point, whatever the locale: `fixed(3.14159, decimals: 2)` is
    /// `3.14`.
    static func fixed(_ value: Double, decimals: Int) -> String {
        String(format: "%.\(max(decimals, 0))f", value.isFinite ? value : 0)
    }
}
