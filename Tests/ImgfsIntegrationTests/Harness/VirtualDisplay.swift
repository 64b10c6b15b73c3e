import Foundation
import ImgfsTestSupport

/// An X server (Xvfb) of its own for the tests that run a real image viewer, and screenshots of it.
///
/// Guarantees: when `init` returns the display answers (xdpyinfo); `stop()` kills Xvfb by PID (tests call it in a
/// `defer`), and `init` stops it itself when it throws.
final class VirtualDisplay {
    /// `:N`, for `DISPLAY`.
    let name: String
    let process: ChildProcess

    /// Starts Xvfb on display `:number` with one screen of `size` (`WIDTHxHEIGHT`) at 24 bits.
    init(number: Int, size: String) throws {
        name = ":\(number)"
        process = try ChildProcess.spawn("/usr/bin/Xvfb", [name, "-screen", "0", "\(size)x24", "-nolisten", "tcp"])
        let display = name
        guard
            Poll.until(
                timeout: 20, interval: 0.2,
                {
                    (try? Self.sh("DISPLAY=\(display) xdpyinfo >/dev/null 2>&1"))?.status == 0
                })
        else {
            stop()
            throw MountedImgfs.StartFailure(description: "Xvfb on \(name) did not answer within 20 s")
        }
    }

    /// How many distinct colours a screenshot of the whole screen, saved as `path` (PNG), has; 0 when none was taken.
    func colours(shot path: String) -> Int {
        let capture = try? Self.sh(
            "DISPLAY=\(name) xwd -root -silent | convert xwd:- '\(path)' && identify -format '%k' '\(path)'")
        return capture?.status == 0 ? Int(capture?.output ?? "") ?? 0 : 0
    }

    /// Waits (up to `timeout` seconds) until a screenshot has more than `minimum` colours: something is shown.
    func waitForPicture(shot path: String, minimum: Int = 1000, timeout: Double = 20) -> Int {
        var colours = 0
        Poll.until(timeout: timeout, interval: 0.2) {
            colours = self.colours(shot: path)
            return colours > minimum
        }
        return colours
    }

    func stop() {
        process.kill9AndReap()
    }

    private static func sh(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 120)
    }
}
