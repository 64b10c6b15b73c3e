import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 4's load test: 2,000 concurrent readers over 10,000 small images with a 64 MiB memory budget.
@Suite("Load", .serialized, .enabled(if: FuseAvailability.available))
struct LoadTests {
    /// The daemon's memory beyond the budget that the test allows: the Swift runtime, libcurl and libfuse, 16 transfer
    /// buffers, the inode and name tables for 10,000 files, and malloc's slack (measured: see docs/PERFORMANCE.md).
    static let fixedOverhead = 96 << 20

    @Test(
        "2,000 readers, 10,000 images, --memory-limit 64M: reads correct, RSS bounded, fds and threads back to idle"
    )
    func crowd() throws {
        let icons = try Fixtures.smallPNGs(20)
        let digests = icons.map(Fixtures.sha256)
        try withMountedOrigin([
            "--memory-limit", "64M", "--tune", "max-transfers-per-host=16",
            "--log-level", "warning"
        ]) { origin, mount in
            origin.route(prefix: "/icon/") { request in
                let index = Int(request.path.split(separator: "/").last ?? "") ?? 0
                return .ok(icons[index % icons.count], contentType: "image/png")
            }
            #expect(PosixFile.read(mount.path("\(origin.baseURL)/icon/warmup")) == .success(icons[0]))
            // Idle: what the warm-up left open is closed once two readings 0.2 s apart agree.
            var readings = [Self.usage(mount.process.pid)]
            Poll.until(interval: 0.2) {
                readings.append(Self.usage(mount.process.pid))
                return readings.count > 2 && readings[readings.count - 1] == readings[readings.count - 2]
            }
            let idle = readings[readings.count - 1]
            let results = ParallelThreads.run(2000) { reader in
                (0..<5).map { step -> Bool in
                    let index = reader * 5 + step
                    guard case .success(let bytes) = PosixFile.read(mount.path("\(origin.baseURL)/icon/\(index)"))
                    else {
                        return false
                    }
                    return SHA256.hex(of: bytes) == digests[index % icons.count]
                }
            }
            let failures = results.flatMap { $0 }.filter { !$0 }.count
            #expect(failures == 0, "\(failures) of 10,000 reads were wrong")
            #expect(origin.totalRequests == 10_001)
            let peak = Self.peakResidentBytes(mount.process.pid)
            #expect(peak > 0 && peak <= (64 << 20) + Self.fixedOverhead, "peak RSS \(peak / (1 << 20)) MiB")
            var settled = Self.usage(mount.process.pid)
            Poll.until(timeout: 10, interval: 0.2) {
                settled = Self.usage(mount.process.pid)
                return settled.files <= idle.files && settled.sockets <= idle.sockets + 16
                    && settled.threads <= idle.threads + 4
            }
            #expect(settled.files <= idle.files, "open files: idle \(idle.files), after \(settled.files)")
            #expect(
                settled.sockets <= idle.sockets + 16,
                """
                sockets: idle \(idle.sockets), after \(settled.sockets) (libcurl keeps up to 16 idle connections to \
                reuse)
                """
            )
            #expect(
                settled.threads <= idle.threads + 4,
                "threads: idle \(idle.threads), after \(settled.threads) (libfuse keeps up to 4 idle workers)")
            print("load: peak RSS \(peak >> 20) MiB; idle \(idle); after \(settled)")
        }
    }

    /// Open descriptors (sockets apart from the rest) and threads of process `pid`.
    static func usage(_ pid: pid_t) -> (files: Int, sockets: Int, threads: Int) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let targets = entries.map {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? ""
        }
        let sockets = targets.filter { $0.hasPrefix("socket:") }.count
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
        return (targets.count - sockets, sockets, threads)
    }

    static func peakResidentBytes(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kib * 1024
    }
}
