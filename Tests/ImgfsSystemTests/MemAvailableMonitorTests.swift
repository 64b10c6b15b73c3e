import ImgfsSystem
import Testing

@Suite("MemAvailable monitor")
struct MemAvailableMonitorTests {
    // The default rate limit is an hour: "within the rate limit" must hold however slowly a loaded machine runs.
    private func monitor(
        _ files: MemoryFiles, threshold: Int? = nil, minimumInterval: Duration = .seconds(3600)
    )
        -> MemAvailableMonitor
    {
        MemAvailableMonitor(
            files: files, thresholdBytes: threshold, interval: .milliseconds(10),
            minimumInterval: minimumInterval, logger: testLogger)
    }

    @Test("reports once when MemAvailable drops below 5 % of MemTotal, and never after stop")
    func meminfoEdge() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        let source = monitor(MemoryFiles(meminfo: fake.path("meminfo")))
        let recorder = Recorder()
        source.start(recorder.handler)
        await settle()
        #expect(recorder.count == 0, "memory is plentiful")

        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 500)
        #expect(await recorder.wait(for: 1))
        #expect(recorder.all.first?.contains("MemAvailable 500 MiB below 819 MiB") == true)
        await settle()
        #expect(recorder.count == 1, "staying low is not a new edge")

        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        await settle(.milliseconds(50))
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 400)
        await settle()
        #expect(recorder.count == 1, "a new edge within the rate limit is not reported")

        source.stop()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        await settle(.milliseconds(30))  // a reading of the high value, if it still read
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 100)
        await settle()
        #expect(recorder.count == 1, "no call after stop")
        source.stop()
    }

    @Test("an explicit threshold counts, and a new edge after the rate limit is reported again")
    func explicitThresholdAndRateLimit() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 2048, availableMiB: 900)
        let source = monitor(
            MemoryFiles(meminfo: fake.path("meminfo")), threshold: 1024 * mebibyte,
            minimumInterval: .milliseconds(150))
        let recorder = Recorder()
        source.start(recorder.handler)
        #expect(await recorder.wait(for: 1), "already short at start: reported once")
        try fake.writeMeminfo(totalMiB: 2048, availableMiB: 1500)
        await settle()
        try fake.writeMeminfo(totalMiB: 2048, availableMiB: 800)
        #expect(await recorder.wait(for: 2), "the second edge is sent once the rate limit allows")
        source.stop()
    }

    @Test("a cgroup v1 limit below MemTotal counts when usage exceeds 90 %")
    func cgroupV1() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        try fake.write("limit", "\(1024 * mebibyte)\n")
        try fake.write("usage", "\(500 * mebibyte)\n")
        let files = MemoryFiles(
            meminfo: fake.path("meminfo"), cgroupV1Limit: fake.path("limit"), cgroupV1Usage: fake.path("usage"))
        let source = monitor(files)
        let recorder = Recorder()
        source.start(recorder.handler)
        await settle()
        #expect(recorder.count == 0)

        try fake.write("usage", "\(950 * mebibyte)\n")
        #expect(await recorder.wait(for: 1))
        #expect(recorder.all.first?.contains("cgroup v1 usage 950 MiB above 90 % of its limit 1024 MiB") == true)
        await settle()
        #expect(recorder.count == 1, "staying high is not a new edge")

        source.stop()
        try fake.write("usage", "\(100 * mebibyte)\n")
        await settle(.milliseconds(30))  // a reading of the high value, if it still read
        try fake.write("usage", "\(1000 * mebibyte)\n")
        await settle()
        #expect(recorder.count == 1, "no call after stop")
    }

    @Test("a cgroup limit at or above MemTotal (unlimited) is ignored; cgroup v2 memory.max counts")
    func unlimitedAndV2() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        try fake.write("limit", "9223372036854771712\n")
        try fake.write("usage", "\(15000 * mebibyte)\n")
        try fake.write("memory.max", "max\n")
        try fake.write("memory.current", "\(15000 * mebibyte)\n")
        let files = MemoryFiles(
            meminfo: fake.path("meminfo"), cgroupV1Limit: fake.path("limit"), cgroupV1Usage: fake.path("usage"),
            cgroupV2Max: fake.path("memory.max"), cgroupV2Current: fake.path("memory.current"))
        let source = monitor(files)
        let recorder = Recorder()
        source.start(recorder.handler)
        await settle()
        #expect(recorder.count == 0)

        try fake.write("memory.max", "\(2048 * mebibyte)\n")
        try fake.write("memory.current", "\(2000 * mebibyte)\n")
        #expect(await recorder.wait(for: 1))
        #expect(recorder.all.first?.contains("cgroup v2") == true)
        source.stop()
    }

    @Test("stop from inside the handler returns and ends the calls; start after stop is ignored")
    func stopInsideHandler() async throws {
        let fake = try FakeFiles()
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 10)
        let source = monitor(MemoryFiles(meminfo: fake.path("meminfo")), minimumInterval: .zero)
        let recorder = Recorder()
        source.start { reason in
            recorder.handler(reason)
            source.stop()
        }
        #expect(await recorder.wait(for: 1))
        source.start(recorder.handler)
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 8192)
        await settle(.milliseconds(30))  // a reading of the high value, if it still read
        try fake.writeMeminfo(totalMiB: 16384, availableMiB: 10)
        await settle()
        #expect(recorder.count == 1)
        source.stop()
    }

    @Test("a missing meminfo file reports nothing and stops promptly")
    func missingFile() async throws {
        let source = monitor(MemoryFiles(meminfo: "/nonexistent/meminfo"))
        let recorder = Recorder()
        source.start(recorder.handler)
        await settle(.milliseconds(30))
        source.stop()
        #expect(recorder.count == 0)
    }
}
