import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 14, items 5 and 8: what readers waiting for the network get when they are interrupted, or when the daemon is
/// told to stop, and that a transfer nobody waits for any more is not started again.
@Suite("Interrupts and shutdown", .serialized, .enabled(if: FuseAvailability.available))
struct ShutdownTests {
    /// How many threads of process `pid` wait in the kernel for imgfs now: for the answer to a FUSE request, or for
    /// another thread's lookup of the same name (their wait channels).
    static func waitingInFuse(_ pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            let channel = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8)) ?? ""
            return ["request_wait_answer", "d_alloc_parallel", "d_wait_lookup"].contains(channel)
        }.count
    }

    @Test("SIGTERM to the daemon: every reader waiting for the network gets ECONNABORTED, and the daemon exits with 0")
    func terminationInterruptsWaitingReaders() throws {
        var stalled = OriginResponse.ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png")
        stalled.headerDelay = 60
        // Headers and the first KiB at once, then a trickle: readers wait in a read, after their open succeeded.
        var trickle = OriginResponse.ok(try Fixtures.mediumJPEG(), contentType: "image/jpeg")
        trickle.bytesPerSecond = 4096
        try withMountedOrigin { origin, mount in
            origin.route("/stalled.png", stalled)
            origin.route("/trickle.jpg", trickle)
            let paths = ["/stalled.png", "/trickle.jpg"].map { mount.path(origin.baseURL + $0) }
            let readers = 8
            let results = Locked<[Result<[UInt8], Errno>]>([])
            let done = DispatchSemaphore(value: 0)
            for index in 0..<readers {
                Thread.detachNewThread {
                    let result = PosixFile.read(paths[index % 2])
                    results.withLock { $0.append(result) }
                    done.signal()
                }
            }
            #expect(Poll.until(timeout: 15) { Self.waitingInFuse(getpid()) >= readers && origin.totalRequests == 2 })
            mount.process.signal(SIGTERM)
            for _ in 0..<readers { #expect(done.wait(timeout: .now() + 15) == .success) }
            // ECONNABORTED for what each reader was waiting in (its open, its read, its lookup): what imgfs answers the
            // requests it calls off at shutdown, and what the kernel answers those imgfs no longer reads. A reader that
            // waited behind another's lookup asks again once the daemon is gone: the kernel answers that ENOTCONN.
            // Never EINTR: nobody interrupted these readers.
            let allowed: [Result<[UInt8], Errno>] = [.failure(Errno(ECONNABORTED)), .failure(Errno(ENOTCONN))]
            let answers = results.withLock { $0 }
            #expect(
                answers.count == readers && answers.allSatisfy(allowed.contains),
                "\(answers.map { (try? $0.get())?.count ?? -1 })")
            #expect(answers.contains(.failure(Errno(ECONNABORTED))))
            #expect(mount.process.wait(timeout: 15) == 0)
        }
    }

    @Test("SIGINT to every reader of a URL that never answers: the transfer is called off and never started again")
    func abandonedTransferIsNotStartedAgain() throws {
        try withMountedOrigin { origin, mount in
            origin.route(prefix: "/never") { _ in
                var response = OriginResponse.ok([0x89, 0x50, 0x4E, 0x47], contentType: "image/png")
                response.headerDelay = 60
                return response
            }
            for run in 1...6 {
                let target = "/never\(run).png"
                let path = mount.path(origin.baseURL + target)
                let readers = try (0..<200).map { _ in try ChildProcess.spawn("/bin/cat", [path]) }
                defer { readers.forEach { $0.kill9AndReap() } }
                #expect(
                    Poll.until(timeout: 20) {
                        origin.requestCount(target) == 1 && readers.allSatisfy { Self.waitingInFuse($0.pid) == 1 }
                    }, "every reader waits in the kernel for imgfs")
                readers.forEach { $0.signal(SIGINT) }
                for reader in readers {
                    #expect(reader.wait(timeout: 10) != nil, "an interrupted reader returns at once")
                }
                let ended =
                    "url=\(origin.baseURL + target) [ImgfsPipeline] transfer called off: nobody wants it any more"
                #expect(Poll.until(timeout: 10) { mount.log.contains(ended) })
                // Nothing can be awaited for an absence: watch for a second request for a while.
                let quiet = !Poll.until(timeout: 1.5) { origin.requestCount(target) > 1 }
                let lines = mount.log.split(separator: "\n").filter { $0.contains(target) }.joined(separator: "\n")
                #expect(quiet, "run \(run): no transfer started again with nobody waiting; log:\n\(lines)")
            }
        }
    }
}
