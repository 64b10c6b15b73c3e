import Foundation
import Glibc
import Synchronization

extension MountedImgfs {
    /// Reads `descriptor` whole, from offset 0, while the daemon is stopped (SIGSTOP) for up to `seconds`: whether the
    /// read finished before the daemon ran again (only a read the kernel serves by itself can: from its page cache or
    /// by passthrough), and what it read in the end. The daemon always runs again before this returns.
    func readWhileStopped(
        _ descriptor: Int32, seconds: Double
    ) -> (
        finishedStopped: Bool, result: Result<[UInt8], Errno>?
    ) {
        let result = Mutex<Result<[UInt8], Errno>?>(nil)
        let done = DispatchSemaphore(value: 0)
        process.signal(SIGSTOP)
        // The block holds the descriptor, not a file object: a block that libdispatch releases late would otherwise
        // keep the file open past the test's unmount.
        DispatchQueue.global().async {
            let bytes = PosixFile.readAll(descriptor)
            result.withLock { $0 = bytes }
            done.signal()
        }
        let finished = done.wait(timeout: .now() + seconds) == .success
        process.signal(SIGCONT)
        if !finished { done.wait() }
        return (finished, result.withLock { $0 })
    }
}
