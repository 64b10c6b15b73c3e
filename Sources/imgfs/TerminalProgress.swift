import Foundation
import Glibc
import ImgfsModel

/// The progress line of `imgfs prefetch` on a terminal: drawn on standard error and redrawn in place (carriage
/// return, then erase to the end of the line), cut to the terminal's width so that it never wraps.
struct TerminalProgress: Sendable {
    /// The progress line for standard error, or nil when standard error is not a terminal.
    static func standardError() -> TerminalProgress? {
        isatty(STDERR_FILENO) == 1 ? TerminalProgress() : nil
    }

    /// Draws `line` over the previous one.
    func draw(_ line: ProgressLine) {
        write("\r\(line.rendered(columns: columns))\u{1B}[K")
    }

    /// Erases the line, leaving the cursor at its start.
    func clear() {
        write("\r\u{1B}[K")
    }

    /// The terminal's width now (it may have been resized), else `$COLUMNS`, else 80.
    private var columns: Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) } ?? 80
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
