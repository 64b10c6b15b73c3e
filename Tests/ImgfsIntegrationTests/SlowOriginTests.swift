import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 34, item 3: origins that trickle (1.6 KiB/s, above the stall limit) on three ports must not keep a reader of
/// a fourth host out: transfers nobody waits for any more are called off when a waited transfer needs a place, and
/// a host with nothing running gets one of the reserve places after a short wait.
@Suite("Slow origins", .serialized, .enabled(if: FuseAvailability.available))
struct SlowOriginTests {
    /// Three origins whose six images each trickle at 1.6 KiB/s, and one healthy origin.
    final class Origins {
        let slow: [TestOrigin]
        let healthy: TestOrigin
        let image: [UInt8]

        init() throws {
            var slowBody = try Fixtures.largeJPEG()
            slowBody += [UInt8](repeating: 0x42, count: max(0, 200_000 - slowBody.count))
            slow = try (0..<3).map { _ in try TestOrigin() }
            for origin in slow {
                for index in 0..<6 {
                    var response = OriginResponse.ok(slowBody, contentType: "image/jpeg")
                    response.bytesPerSecond = 1640
                    origin.route("/slow\(index).jpg", response)
                }
            }
            healthy = try TestOrigin()
            image = try Fixtures.smallPNGs(1)[0]
            healthy.route("/fast.png", .ok(image, contentType: "image/png"))
        }

        var slowURLs: [String] { slow.flatMap { origin in (0..<6).map { "\(origin.baseURL)/slow\($0).jpg" } } }

        func stop() {
            (slow + [healthy]).forEach { $0.stop() }
        }
    }

    @Test("18 stats of trickling images on 3 ports: those transfers are called off, a 4th host's image comes at once")
    func statsDoNotHoldPlaces() throws {
        let origins = try Origins()
        defer { origins.stop() }
        let mount = try MountedImgfs()
        defer { mount.stop() }
        let stats = try origins.slowURLs.map { url in
            try ChildProcess.spawn("/usr/bin/stat", ["-c", "%s", mount.path(url)], outputPath: "/dev/null")
        }
        defer { stats.forEach { $0.kill9AndReap() } }
        // Every stat gets its answer: the two that waited for a place get one once the others' transfers go.
        let answered = Poll.until(timeout: 10, interval: 0.1) { stats.allSatisfy { !$0.isRunning } }
        #expect(answered, "\(stats.filter { $0.isRunning }.count) stats still wait")
        let start = ContinuousClock.now
        let read = PosixFile.read(mount.path(origins.healthy.baseURL + "/fast.png"))
        let waited = start.duration(to: .now)
        #expect(read == .success(origins.image))
        #expect(waited < .seconds(5), "the healthy host's image took \(waited)")
        #expect(mount.waitForLog { $0.components(separatedBy: "transfer called off: nobody waits").count > 16 })
        #expect(HostileInputTests.alive(mount))
    }

    @Test("16 readers of trickling images hold every place: a 4th host's reader still gets its image within 5 s")
    func readersOfSlowHostsDoNotLockOthersOut() throws {
        let origins = try Origins()
        defer { origins.stop() }
        let mount = try MountedImgfs()
        defer { mount.stop() }
        // Readers that keep their files open: wanted transfers, never called off.
        let readers = try origins.slowURLs.prefix(16).map { url in
            try ChildProcess.spawn("/bin/cat", [mount.path(url)], outputPath: "/dev/null")
        }
        defer { readers.forEach { $0.kill9AndReap() } }
        #expect(mount.waitForStatistics { ($0["repository.counters.transfers"] ?? 0) >= 16 })
        Thread.sleep(forTimeInterval: 1)
        let start = ContinuousClock.now
        let read = PosixFile.read(mount.path(origins.healthy.baseURL + "/fast.png"))
        let waited = start.duration(to: .now)
        #expect(read == .success(origins.image))
        #expect(waited < .seconds(5), "the healthy host's image took \(waited)")
        #expect(!mount.log.contains("transfer called off: nobody waits"), "a transfer with a reader was called off")
        #expect(readers.allSatisfy { $0.isRunning }, "a reader of a slow image ended early")
    }
}
