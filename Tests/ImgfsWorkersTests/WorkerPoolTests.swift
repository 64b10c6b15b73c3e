import Foundation
import Glibc
import ImgfsWorkers
import Synchronization
import Testing

@Suite("Worker pool")
struct WorkerPoolTests {
    @Test("one thread runs jobs one at a time, in the order they came; drain waits for them")
    func fifo() {
        let pool = WorkerPool(name: "test-fifo")
        let seen = Mutex<[Int]>([])
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        for index in 0..<200 {
            pool.submit {
                if running.add(1, ordering: .relaxed).newValue > 1 { overlapped.store(true, ordering: .relaxed) }
                if index % 20 == 0 { usleep(1000) }
                seen.withLock { $0.append(index) }
                running.subtract(1, ordering: .relaxed)
            }
        }
        pool.drain()
        #expect(seen.withLock { $0 } == Array(0..<200))
        let overlapping = overlapped.load(ordering: .relaxed)
        #expect(!overlapping)
    }

    @Test("at most `count` jobs run at once, each on one of the pool's threads, named name-<n>")
    func bounded() {
        let pool = WorkerPool(name: "test-bound", threads: 3)
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
        let names = Mutex<Set<String>>([])
        for _ in 0..<60 {
            pool.submit {
                let now = running.add(1, ordering: .relaxed).newValue
                peak.max(now, ordering: .relaxed)
                names.withLock { _ = $0.insert(threadName()) }
                usleep(2000)
                running.subtract(1, ordering: .relaxed)
            }
        }
        pool.drain()
        #expect(pool.count == 3)
        let most = peak.load(ordering: .relaxed)
        #expect((2...3).contains(most))
        #expect(names.withLock { $0 }.isSubset(of: ["test-bound-0", "test-bound-1", "test-bound-2"]))
    }

    @Test("drain returns once every job submitted before it has run, on several threads, not only the last one")
    func drainWaits() {
        let pool = WorkerPool(name: "test-drain", threads: 4)
        let finished = Atomic<Int>(0)
        for index in 0..<8 {
            pool.submit {
                usleep(useconds_t(index == 0 ? 200_000 : 1000))
                finished.add(1, ordering: .relaxed)
            }
        }
        pool.drain()
        let count = finished.load(ordering: .relaxed)
        #expect(count == 8)
        pool.drain()  // nothing queued: returns at once
    }

    @Test("a job that submits a job does not keep drain waiting")
    func nestedSubmit() {
        let pool = WorkerPool(name: "test-nested")
        let seen = Mutex<[String]>([])
        pool.submit {
            pool.submit { seen.withLock { $0.append("inner") } }
            usleep(20_000)
            seen.withLock { $0.append("outer") }
        }
        #expect(returns(within: 5) { pool.drain() })
        #expect(seen.withLock { $0 }.first == "outer")
        #expect(returns(within: 5) { pool.drain() })
        #expect(seen.withLock { $0 } == ["outer", "inner"])
    }

    @Test("what a job captures is let go once it has run, not kept by the queue")
    func releasesJobs() {
        final class Payload: Sendable {}
        let pool = WorkerPool(name: "test-release")
        weak var weakPayload: Payload?
        do {
            let payload = Payload()
            weakPayload = payload
            pool.submit { _ = payload }
        }
        pool.drain()
        #expect(weakPayload == nil)
    }

    @Test("after stop nothing more runs: queued jobs are dropped, later ones ignored, and the threads end")
    func stop() async {
        let pool = WorkerPool(name: "test-stop", threads: 2)
        let release = DispatchSemaphore(value: 0)
        let ran = Atomic<Int>(0)
        for _ in 0..<2 { pool.submit { release.wait() } }
        for _ in 0..<10 { pool.submit { ran.add(1, ordering: .relaxed) } }
        #expect(await eventually { threads(named: "test-stop-").count == 2 })
        pool.stop()
        pool.submit { ran.add(1, ordering: .relaxed) }
        #expect(!returns(within: 0.2) { pool.drain() }, "drain waits for the running jobs")
        release.signal()
        release.signal()
        pool.drain()
        #expect(await eventually { threads(named: "test-stop-").isEmpty })
        let count = ran.load(ordering: .relaxed)
        #expect(count == 0)
    }

    @Test("a pool nobody holds runs what is queued, then ends its threads")
    func released() async {
        let ran = Atomic<Int>(0)
        do {
            let pool = WorkerPool(name: "test-released", threads: 2)
            for _ in 0..<20 {
                pool.submit {
                    usleep(1000)
                    ran.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(await eventually { ran.load(ordering: .relaxed) == 20 && threads(named: "test-released").isEmpty })
    }

    @Test("background threads run at nice 19; the caller's priority is unchanged; one thread is named `name`")
    func background() {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let caller = getpriority(which, 0)
        let pool = WorkerPool(name: "test-low", threads: 2, priority: .background)
        let normal = WorkerPool(name: "test-normal")
        let seen = Mutex<[String: Int32]>([:])
        for _ in 0..<4 {
            pool.submit { seen.withLock { $0[threadName()] = niceness() } }
        }
        normal.submit { seen.withLock { $0[threadName()] = niceness() } }
        pool.drain()
        normal.drain()
        #expect(seen.withLock { $0 }["test-normal"] == caller)
        let low = seen.withLock { $0 }.filter { $0.key.hasPrefix("test-low-") }
        #expect(!low.isEmpty && low.values.allSatisfy { $0 == 19 }, "\(low)")
        #expect(getpriority(which, 0) == caller)
    }
}

/// The name of the calling thread.
private func threadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// The calling thread's nice value, read from its /proc stat (field 19) rather than through the call that set it.
private func niceness() -> Int32? {
    guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    // After the name: state (field 3) onward; nice is field 19.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    return fields.count > 16 ? Int32(fields[16]) : nil
}

/// The names of this process's threads that start with `prefix`.
private func threads(named prefix: String) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix(prefix) ? name : nil
    }
}

/// Whether `body`, run on a thread of its own, returns within `seconds` (a deadlock fails the test, not hangs it).
private func returns(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    return done.wait(timeout: .now() + seconds) == .success
}

/// Polls `condition` every 5 ms for up to 5 s.
private func eventually(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(5)
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}
