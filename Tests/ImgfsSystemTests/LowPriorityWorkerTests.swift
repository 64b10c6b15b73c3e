import Foundation
import Glibc
import ImgfsSystem
import Synchronization
import Testing

@Suite("Low-priority worker")
struct LowPriorityWorkerTests {
    @Test("runs work in order on a nice-19 thread; drain waits for what was submitted before it")
    func orderAndPriority() throws {
        let worker = try LowPriorityWorker(name: "test-worker")
        let seen = Mutex<[Int]>([])
        let niceness = Mutex<Int32?>(nil)
        worker.submit {
            errno = 0
            let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            niceness.withLock { $0 = errno == 0 ? value : nil }
        }
        for index in 0..<100 {
            worker.submit {
                usleep(100)
                seen.withLock { $0.append(index) }
            }
        }
        worker.drain()
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(niceness.withLock { $0 } == 19)
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == 0, "the caller's priority is unchanged")
    }
}
