import Glibc
import ImgfsWorkers

/// A worker thread plus a wake-up pipe whose read end the thread includes in its `poll` set, so `stop` can interrupt
/// a blocking poll at once.
final class PollingWorker: Sendable {
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let thread: WorkerThread

    /// Starts `body` on its own thread named `name`, passing the descriptor that becomes readable on `stop`.
    init(
        name: String, _ body: @escaping @Sendable (_ wakeFD: Int32) -> Void
    ) throws(SystemCallError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemCallError(call: "pipe", code: errno) }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        let readEnd = ends[0]
        do {
            thread = try WorkerThread(name: name) { body(readEnd) }
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    /// Wakes the thread, waits for it to end (unless called from the thread itself) and closes the pipe. Call once;
    /// the body must check its own stop flag before polling again, since the pipe is closed afterwards.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        thread.join()
        close(wakeRead)
        close(wakeWrite)
    }
}
