import Foundation
import ImgfsModel
import ImgfsSystem
import Testing

@Suite("PSI memory pressure")
struct PSIMemoryPressureTests {
    static let hasPSI = FileManager.default.fileExists(atPath: "/proc/pressure/memory")

    @Test("registers the default trigger and stop joins the thread promptly", .enabled(if: hasPSI))
    func registerAndStop() async throws {
        let source = try PSIMemoryPressure(logger: testLogger)
        #expect(source.trigger == "some 150000 2000000")
        #expect(source.path.hasSuffix("memory.pressure") || source.path == "/proc/pressure/memory")
        let others = threads(named: "imgfs-psi")  // of tests running at the same time
        source.start { _ in }
        #expect(
            await eventually(timeout: .seconds(5)) { !threads(named: "imgfs-psi", asleep: true).isSubset(of: others) },
            "the thread waits in its poll")
        let clock = ContinuousClock()
        let elapsed = clock.measure { source.stop() }
        #expect(elapsed < .seconds(1))
        source.stop()
    }

    @Test("make returns a source, which can be stopped without being started", .enabled(if: hasPSI))
    func makeAndStopUnstarted() {
        let source = PSIMemoryPressure.make(logger: testLogger)
        #expect(source != nil)
        source?.stop()
        source?.stop()
        source?.start { _ in Issue.record("a stopped source must not call") }
        source?.stop()
    }

    @Test("an impossible window is refused and reported", .enabled(if: hasPSI))
    func impossibleWindow() {
        #expect(
            PSIMemoryPressure.make(threshold: .milliseconds(50), window: .milliseconds(100), logger: testLogger)
                == nil)
        do {
            _ = try PSIMemoryPressure(
                path: "/proc/pressure/memory", threshold: .milliseconds(50), window: .milliseconds(100),
                logger: testLogger)
            Issue.record("a 100 ms window must be refused")
        } catch {
            #expect(error.path == "/proc/pressure/memory")
            #expect(error.trigger == "some 50000 100000")
            #expect(error.reason.hasPrefix("Invalid argument"))
            #expect(error.description.contains("500 ms to 10 s"))
        }
    }

    @Test("a missing pressure file or a threshold above the window is refused")
    func otherRefusals() {
        #expect(throws: PSIRegistrationError.self) {
            try PSIMemoryPressure(path: "/nonexistent/memory.pressure", logger: testLogger)
        }
        #expect(throws: PSIRegistrationError.self) {
            try PSIMemoryPressure(threshold: .seconds(3), window: .seconds(2), logger: testLogger)
        }
    }

    @Test("best picks PSI here", .enabled(if: hasPSI))
    func best() {
        let source = MemoryPressureSources.best(logger: testLogger)
        #expect(source is PSIMemoryPressure)
        source.stop()
    }
}
