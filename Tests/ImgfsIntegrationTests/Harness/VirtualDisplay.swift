import Foundation
import Glibc
import ImgfsTestSupport

/// An X server of the test's own (Xvfb, black root window) on a display number no other server holds, for programs
/// that need a window; and screenshots of it.
///
/// Guarantees: `init` returns only once this test's own server answers (another test's server on the same number is
/// never used: a number whose lock is held makes Xvfb exit, and the next number is tried). `stop()` kills the server
/// by PID and reaps it.
final class VirtualDisplay {
    /// `:N`, for `DISPLAY`.
    let name: String
    private let server: ChildProcess

    init(width: Int = 800, height: Int = 600) throws {
        let first = 110 + Int(getpid() % 50)
        for number in first..<(first + 40) {
            let name = ":\(number)"
            let server = try ChildProcess.spawn(
                "/usr/bin/Xvfb", [name, "-screen", "0", "\(width)x\(height)x24", "-br", "-nolisten", "tcp"])
            let answered = Poll.until(timeout: 20, interval: 0.1) {
                !server.isRunning || (try? Self.shell("DISPLAY=\(name) xdpyinfo >/dev/null 2>&1").status) == 0
            }
            if answered && server.isRunning {
                self.name = name
                self.server = server
                return
            }
            server.kill9AndReap()
        }
        throw MountedImgfs.StartFailure(description: "no free X display for Xvfb")
    }

    func stop() { server.kill9AndReap() }

    /// This process's environment with `DISPLAY` set to this display.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = name
        return environment
    }

    /// Writes a PNG of the whole screen to `path`; returns how many distinct colours it holds (1 for a blank screen).
    func screenshot(to path: String) throws -> Int {
        let run = try Self.shell(
            "xwd -display \(name) -root -silent | convert xwd:- '\(path)' && identify -format '%k' '\(path)'")
        return run.status == 0 ? Int(run.output) ?? 0 : 0
    }

    /// Runs `program` on this display and waits until what it draws has settled: two screenshots a moment apart are
    /// identical and hold more than `minimumColours` colours. Leaves the last one at `path`, stops the program (by
    /// PID) and returns the colours counted, 0 when the screen never settled.
    func settledScreenshot(
        of program: String, _ arguments: [String], to path: String, minimumColours: Int, log: String
    ) throws -> Int {
        let viewer = try ChildProcess.spawn(program, arguments, environment: environment, outputPath: log)
        defer { viewer.kill9AndReap() }
        let previous = "\(path).previous.png"
        defer { unlink(previous) }
        var colours = 0
        let settled = Poll.until(timeout: 30, interval: 0.3) {
            let earlier = (try? screenshot(to: previous)) ?? 0
            colours = (try? screenshot(to: path)) ?? 0
            return earlier > minimumColours && colours > minimumColours
                && Self.differingPixels(previous, path) == 0
        }
        return settled && viewer.isRunning ? colours : 0
    }

    /// How many pixels differ between two images of the same size (ImageMagick `compare -metric AE`), or nil when
    /// they cannot be compared.
    static func differingPixels(_ a: String, _ b: String) -> Int? {
        guard let run = try? shell("compare -metric AE '\(a)' '\(b)' null: 2>&1"), run.status <= 1 else { return nil }
        return Double(run.output.trimmingCharacters(in: .whitespacesAndNewlines)).map { Int($0) }
    }

    private static func shell(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 60)
    }
}
