import Foundation
import ImgfsTestSupport
import Testing

/// Issue 16: the header probe of `imgfs list add` shows a progress bar on a terminal, and only there.
@Suite("List probe progress", .serialized, .enabled(if: FuseAvailability.available))
struct ListProbeProgressTests {
    /// Runs `command` with a pseudo-terminal of 80 columns as its standard input, output and error (Python's `pty`),
    /// as in an interactive shell; returns its exit status and everything it wrote to the terminal, byte for byte.
    static func inTerminal(_ command: [String]) throws -> (status: Int32, output: String) {
        let script = """
            import fcntl, os, pty, struct, sys, termios
            pid, fd = pty.fork()
            if pid == 0:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                os.execv(sys.argv[1], sys.argv[1:])
            out = b""
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                out += data
            _, status = os.waitpid(pid, 0)
            sys.stdout.buffer.write(out)
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        return try ChildProcess.run("/usr/bin/python3", ["-c", script] + command, timeout: 120)
    }

    @Test("list add probes URLs without an extension with a progress bar on a terminal; none through a pipe")
    func progressBar() throws {
        let fixture = try ListFixture()
        defer { fixture.stop() }
        let icon = fixture.icons[2]
        // URLs that name no image type: each needs a probe (a stat through the mount, which waits for the headers).
        fixture.origin.route(prefix: "/p/") { _ in
            var response = OriginResponse.ok(icon, contentType: "image/png")
            response.headerDelay = 0.02
            return response
        }
        let count = 40
        let file = "\(fixture.mount.root)/probed.txt"
        try (1...count).map { "\(fixture.origin.baseURL)/p/\($0)" }.joined(separator: "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let run = try Self.inTerminal(
            [MountedImgfs.binary, "list", "add", "--concurrency", "4", fixture.mount.mountPoint, "probed", file])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("list probed: \(count) entries"), "\(run.output)")
        // One redraw per finished probe: carriage return, the bar, the counts, erase to the end of the line.
        let redraws = run.output.components(separatedBy: "\r[").count - 1
        #expect(redraws == count, "\(redraws) redraws of the bar in \(run.output.debugDescription.prefix(600))")
        let counts = (1...count).filter { run.output.contains("]  \($0)/\(count)  ") }
        #expect(counts == Array(1...count), "each probe that finished moved the counts: \(counts)")
        // At 80 columns the bar is 24 characters wide: 22 inside the brackets, all `#` once every probe is done.
        #expect(run.output.contains("\r[" + String(repeating: "#", count: 22) + "]  \(count)/\(count)  "), "a full bar")
        #expect(run.output.contains("\r\u{1B}[K"), "the bar is erased at the end")
        let probed = Set(fixture.origin.requests().map(\.path).filter { $0.hasPrefix("/p/") })
        #expect(probed.count == count, "every URL was probed once: \(probed.count)")
        let names = try fixture.ls("lists/probed")
        #expect(names.count == count && names.allSatisfy { $0.hasSuffix(".png") }, "\(names.prefix(3))")

        // The same through a pipe (what scripts and this test harness see): no bar, no control characters.
        try (1...count).map { "\(fixture.origin.baseURL)/p/\(100 + $0)" }.joined(separator: "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let piped = try ChildProcess.run(
            MountedImgfs.binary, ["list", "add", "--concurrency", "4", fixture.mount.mountPoint, "piped", file])
        #expect(piped.status == 0, "\(piped.output)")
        #expect(piped.output == "list piped: \(count) entries\n", "\(piped.output.debugDescription)")
        #expect(try fixture.ls("lists/piped").allSatisfy { $0.hasSuffix(".png") }, "probed all the same")
    }
}
