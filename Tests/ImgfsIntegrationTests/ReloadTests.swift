import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 39, item 1: SIGHUP and `imgfs reload` never unmount; they reread the policy file, reopen the log file, or
/// say there is nothing to reload.
@Suite("Reload", .serialized, .enabled(if: FuseAvailability.available))
struct ReloadTests {
    @Test("without --policy-file and logging to stderr, imgfs reload exits 1 saying so, and SIGHUP keeps the mount")
    func nothingToReload() throws {
        try withMountedOrigin { origin, mount in
            let image = try Fixtures.smallPNGs(1)[0]
            origin.route("/a.png", .ok(image, contentType: "image/png"))
            let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", mount.mountPoint])
            #expect(reload.status == 1, "\(reload.output)")
            #expect(reload.output.contains("nothing to reload"), "\(reload.output)")
            Poll.elapse(1)
            #expect(mount.isMounted, "imgfs reload left the mount alone")
            mount.process.signal(SIGHUP)
            #expect(mount.waitForLog { $0.contains("SIGHUP: nothing to reload") }, "\(mount.log)")
            Poll.elapse(1)
            #expect(mount.isMounted, "SIGHUP left the mount alone")
            #expect(mount.process.isRunning)
            #expect(PosixFile.read(mount.path("\(origin.baseURL)/a.png")) == .success(image))
            #expect(mount.statistics()["reload.reloads"] == 1)
        }
    }

    @Test("a background mount reopens its log file on imgfs reload (logrotate) and says so")
    func reopensTheLogFile() throws {
        let mount = try BackgroundMount()
        defer { mount.stop() }
        let rotated = mount.logPath + ".1"
        #expect(rename(mount.logPath, rotated) == 0)
        let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", mount.mountPoint])
        #expect(reload.status == 0, "\(reload.output)")
        #expect(reload.output.contains("reopened the log file \(mount.logPath)"), "\(reload.output)")
        #expect(reload.output.contains("no --policy-file to reread"), "\(reload.output)")
        let fresh = (try? String(contentsOfFile: mount.logPath, encoding: .utf8)) ?? ""
        #expect(fresh.contains("reopened the log file"), "the new log file receives the daemon's lines: \(fresh)")
        Poll.elapse(0.5)
        #expect(mount.isMounted && mount.daemonIsRunning)
    }
}
