import Glibc
import Testing

@testable import ImgfsSystem

@Suite("Parsing and edges")
struct InternalsTests {
    @Test("meminfo and status lines are read in bytes")
    func meminfo() {
        let text = "MemTotal:       24684084 kB\nMemFree: 1 kB\nMemAvailable:   24274212 kB\nHugePages_Total: 0\n"
        #expect(MemorySnapshot.meminfoValue("MemTotal", in: text) == 24_684_084 * 1024)
        #expect(MemorySnapshot.meminfoValue("MemAvailable", in: text) == 24_274_212 * 1024)
        #expect(MemorySnapshot.meminfoValue("HugePages_Total", in: text) == 0)
        #expect(MemorySnapshot.meminfoValue("Missing", in: text) == nil)
        #expect(Allocator.residentBytes(status: "Name:\tx\nVmRSS:\t   2048 kB\n") == 2 << 20)
    }

    @Test("the default threshold is 5 % of MemTotal but at least 256 MiB")
    func threshold() {
        #expect(MemorySnapshot.defaultThreshold(total: 16 << 30) == (16 << 30) / 20)
        #expect(MemorySnapshot.defaultThreshold(total: 1 << 30) == 256 << 20)
        #expect(MemorySnapshot.defaultThreshold(total: nil) == 256 << 20)
    }

    @Test("the own cgroup v2 group comes from the 0:: line")
    func cgroupLine() {
        #expect(CgroupPaths.parseV2Group("4:memory:/a\n0::/user.slice/imgfs.service\n") == "/user.slice/imgfs.service")
        #expect(CgroupPaths.parseV2Group("0::/\n") == "/")
        #expect(CgroupPaths.parseV2Group("4:memory:/a\n") == nil)
        #expect(CgroupPaths.pressureFiles().last == "/proc/pressure/memory")
    }

    @Test("edges are reported once, rate limited, and dropped when pressure ends first")
    func edges() {
        let start = ContinuousClock.now
        var edge = PressureEdge(minimumInterval: .seconds(5))
        #expect(edge.record(nil, now: start) == nil)
        #expect(edge.record("low", now: start) == "low")
        #expect(edge.record("low", now: start + .seconds(10)) == nil)
        #expect(edge.record(nil, now: start + .seconds(11)) == nil)
        #expect(edge.record("again", now: start + .seconds(12)) == "again")
        #expect(edge.record(nil, now: start + .seconds(13)) == nil)
        #expect(edge.record("soon", now: start + .seconds(14)) == nil, "within 5 s of the last call")
        #expect(edge.record("soon", now: start + .seconds(17)) == "soon", "sent once the limit allows")
        #expect(edge.record(nil, now: start + .seconds(18)) == nil)
        #expect(edge.record("x", now: start + .seconds(19)) == nil)
        #expect(edge.record(nil, now: start + .seconds(20)) == nil)
        #expect(edge.record(nil, now: start + .seconds(30)) == nil, "the pending edge was dropped")
    }

    @Test("trigger text is in microseconds")
    func triggerText() {
        #expect(PSITrigger.text(threshold: .milliseconds(150), window: .seconds(2)) == "some 150000 2000000")
        #expect(PSITrigger.windowHint(.seconds(2)) == nil)
        #expect(PSITrigger.windowHint(.seconds(1))?.contains("CAP_SYS_RESOURCE") == true)
        #expect(PSITrigger.windowHint(.milliseconds(100)) != nil)
    }
}

@Suite("Process capabilities")
struct ProcessCapabilitiesTests {
    @Test("CapEff is read as a hexadecimal mask; CAP_SYS_ADMIN is bit 21 of it")
    func effectiveSet() {
        let root = "Name:\timgfs\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n"
        let user = "Name:\timgfs\nCapEff:\t0000000000000000\n"
        #expect(ProcessCapabilities.effectiveSet(status: root) == 0x1ff_ffff_ffff)
        #expect(ProcessCapabilities.effectiveSet(status: user) == 0)
        #expect(ProcessCapabilities.effectiveSet(status: "Name:\tx\n") == nil)
        #expect(ProcessCapabilities.holdsSystemAdministration(status: root))
        #expect(ProcessCapabilities.holdsSystemAdministration(status: "CapEff:\t0000000000200000\n"))
        #expect(!ProcessCapabilities.holdsSystemAdministration(status: "CapEff:\t000001ffffdfffff\n"))
        #expect(!ProcessCapabilities.holdsSystemAdministration(status: user))
        #expect(!ProcessCapabilities.holdsSystemAdministration(status: "Name:\tx\n"))
    }

    @Test("this process's answer matches its effective user (the tests run as root or as a user without capabilities)")
    func ownProcess() {
        #expect(ProcessCapabilities.hasSystemAdministration() == (geteuid() == 0))
    }
}
