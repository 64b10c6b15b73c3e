import ArgumentParser
import Testing

@testable import imgfs

/// Issue 35: the measured knobs sit behind one `--tune KEY=VALUE`; bad items are errors that name the valid keys.
@Suite("--tune")
struct TuningTests {
    private func message(_ items: [String]) -> String {
        do {
            _ = try Tuning(items)
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test("good keys set their value; the last one given wins; case and _ do not matter")
    func goodKeys() throws {
        let tuning = try Tuning([
            "kernel-read-ahead=512", "pages=small", "passthrough=off", "direct_cold_reads=OFF", "timeout=90s",
            "shared-timeout=200ms", "shared-max-size=1M", "Fetch-Threads=2", "retries=0", "retries=5",
            "failure-memory=30s"
        ])
        #expect(tuning.kernelReadAheadKiB == 512 && tuning.pages == .small)
        #expect(!tuning.passthrough && !tuning.directColdReads)
        #expect(tuning.timeout == 90 && tuning.sharedTimeout == 0.2 && tuning.sharedMaxSize == 1 << 20)
        #expect(tuning.fetchThreads == 2 && tuning.retries == 5 && tuning.failureMemory == 30)
        #expect(Tuning().failureMemory == 10)
        #expect(try Tuning([]) == Tuning())
    }

    @Test("every key has a default, a summary and a unique name")
    func keysAreDocumented() {
        let names = Tuning.keys.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Tuning.keys.allSatisfy { !$0.defaultValue.isEmpty && !$0.summary.isEmpty })
    }

    @Test("an unknown key is an error naming the valid keys")
    func unknownKey() {
        let text = message(["small-pages=on"])
        #expect(text.contains("unknown key 'small-pages'"), "\(text)")
        #expect(Tuning.keys.allSatisfy { text.contains($0.name) }, "\(text)")
        #expect(message(["kernel-read-ahead"]).contains("expected KEY=VALUE"))
    }

    @Test("a bad value is an error naming the key and what it takes")
    func badValue() {
        #expect(message(["kernel-read-ahead=lots"]).contains("kernel-read-ahead=lots: expected a whole number"))
        #expect(message(["pages=giant"]).contains("one of large, huge, small"))
        #expect(message(["passthrough=maybe"]).contains("on or off"))
        #expect(message(["timeout=soon"]).contains("timeout=soon: expected a duration"))
        #expect(message(["shared-max-size=0"]).contains("a size above 0"))
    }

    @Test("extreme values: the ends of each range are taken, one past them is refused")
    func extremes() throws {
        #expect(try Tuning(["kernel-read-ahead=0"]).kernelReadAheadKiB == 0)
        #expect(try Tuning(["kernel-read-ahead=65536"]).kernelReadAheadKiB == 65536)
        #expect(!message(["kernel-read-ahead=65537"]).isEmpty)
        #expect(!message(["kernel-read-ahead=-1"]).isEmpty)
        #expect(!message(["fetch-threads=0"]).isEmpty)
        #expect(!message(["max-pixels=99999999999999999999999"]).isEmpty)
        #expect(try Tuning(["shared-lease=100ms"]).sharedLease == 0.1)
        #expect(!message(["shared-lease=99ms"]).isEmpty)
        #expect(!message(["timeout=0"]).isEmpty)
        #expect(!message(["timeout=8d"]).isEmpty)
        #expect(!message(["timeout=1e300"]).isEmpty)
        #expect(try Tuning(["stall-timeout=7d"]).stallTimeout == 7 * 24 * 3600)
    }

    @Test("imgfs mount refuses a bad --tune before it mounts")
    func mountValidates() {
        #expect(throws: (any Error).self) { try MountCommand.parse(["/mnt", "--tune", "nope=1"]) }
        #expect(throws: Never.self) { try MountCommand.parse(["/mnt", "--tune", "pages=huge", "--tune", "retries=1"]) }
    }
}
