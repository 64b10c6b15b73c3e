import Foundation
import ImgfsCore

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

    /// The width of the bar, in characters, when the line has room for it.
    static let barWidth = 24
    /// The narrowest bar worth drawing; with less room the line goes without one.
    static let minimumBarWidth = 5

    /// A batch of `total` items of which `done` have finished (`failed` of them unsuccessfully) after `seconds`,
    /// having transferred `bytes`.
    init(total: Int, done: Int = 0, failed: Int = 0, bytes: Int = 0, seconds: Double = 0) {
        self.total = total
        self.done = done
        self.failed = failed
        self.bytes = bytes
        self.seconds = seconds
    }

    /// How many items finished successfully.
    var succeeded: Int { max(done - failed, 0) }

    /// The part of the batch finished, from 0 to 1 (1 for an empty batch).
    var fraction: Double {
        total > 0 ? min(max(Double(done) / Double(total), 0), 1) : 1
    }

    /// Bytes per second over the whole batch so far (0 before any time has passed).
    var bytesPerSecond: Double {
        seconds > 0 ? Double(bytes) / seconds : 0
    }

    /// Seconds until the batch ends at the pace of items so far, or nil before any item has finished.
    var remainingSeconds: Double? {
        guard done > 0, seconds > 0 else { return nil }
        return seconds / Double(done) * Double(max(total - done, 0))
    }

    /// The line to redraw in place, at most `columns - 1` characters (so that it never wraps), e.g.
    /// `[##########--------------]  42/100  3.1 MiB  1.25 MiB/s  ETA 0:07  2 failed`.
    /// The bar narrows, then goes, then the text is cut when the terminal is narrow.
    func rendered(columns: Int = 80) -> String {
        let counts = "\(done)/\(total)"
        let text = [
            counts, Quantity.describe(bytes: bytes), Self.rate(bytesPerSecond),
            "ETA \(remainingSeconds.map(Self.clock) ?? "--:--")", "\(failed) failed"
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
