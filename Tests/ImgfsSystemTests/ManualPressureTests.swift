import Foundation
import ImgfsSystem
import Synchronization
import Testing

@Suite("Manual and combined pressure")
struct ManualPressureTests {
    @Test("fire calls the handler with the reason only while started")
    func fire() {
        let source = ManualPressure()
        let recorder = Recorder()
        #expect(source.fire(reason: "early") == false)
        source.start(recorder.handler)
        #expect(source.isStarted)
        #expect(source.fire(reason: "SIGUSR1"))
        #expect(recorder.all == ["SIGUSR1"])
        source.stop()
        #expect(source.fire(reason: "late") == false)
        #expect(recorder.all == ["SIGUSR1"])
        source.stop()
    }

    @Test("a fire or stop from inside the handler neither deadlocks nor nests")
    func insideHandler() {
        let source = ManualPressure()
        let nested = Mutex<Bool?>(nil)
        source.start { _ in
            let delivered = source.fire(reason: "nested")
            nested.withLock { $0 = delivered }
            source.stop()
        }
        #expect(source.fire(reason: "outer"))
        #expect(nested.withLock { $0 } == false)
        #expect(source.fire(reason: "after") == false)
    }

    @Test("concurrent fires never run the handler twice at once")
    func concurrentFires() {
        let source = ManualPressure()
        let active = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let calls = Atomic<Int>(0)
        source.start { _ in
            if active.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                overlaps.add(1, ordering: .relaxed)
            }
            calls.add(1, ordering: .relaxed)
            active.subtract(1, ordering: .sequentiallyConsistent)
        }
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<200 { source.fire(reason: "load") }
        }
        source.stop()
        #expect(overlaps.load(ordering: .relaxed) == 0)
        #expect(calls.load(ordering: .relaxed) >= 1)
    }

    @Test("combined sources share one handler and all stop together")
    func combined() {
        let first = ManualPressure()
        let second = ManualPressure()
        let combined = CombinedPressure(sources: [first, second])
        let recorder = Recorder()
        combined.start(recorder.handler)
        #expect(first.fire(reason: "one"))
        #expect(second.fire(reason: "two"))
        #expect(recorder.all == ["one", "two"])
        combined.stop()
        #expect(first.fire(reason: "late") == false)
        #expect(second.fire(reason: "late") == false)
        #expect(recorder.count == 2)
        combined.stop()
    }

    @Test("combined with a polling monitor: stop ends both")
    func combinedWithMonitor() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        let monitor = MemAvailableMonitor(
            files: MemoryFiles(meminfo: fake.path("meminfo")), interval: .milliseconds(10), logger: testLogger)
        let manual = ManualPressure()
        let combined = CombinedPressure(sources: [monitor, manual])
        let recorder = Recorder()
        combined.start(recorder.handler)
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 100)
        #expect(await recorder.wait(for: 1))
        #expect(manual.fire(reason: "manual"))
        #expect(recorder.count == 2)
        combined.stop()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        await settle(.milliseconds(30))  // a reading of the high value, if it still read
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 100)
        await settle(.milliseconds(50))
        #expect(recorder.count == 2)
    }
}
