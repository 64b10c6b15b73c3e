import Foundation
import Logging
import Synchronization

/// Records the reasons a pressure handler was called with.
final class Recorder: Sendable {
    private let reasons = Mutex<[String]>([])

    /// A handler that records its reason.
    var handler: @Sendable (String) -> Void {
        { [self] reason in reasons.withLock { $0.append(reason) } }
    }

    var count: Int { reasons.withLock { $0.count } }
    var all: [String] { reasons.withLock { $0 } }

    /// Waits until at least `count` calls were recorded, at most `timeout`; returns whether they were.
    func wait(for count: Int, timeout: Duration = .seconds(1)) async -> Bool {
        await eventually(timeout: timeout) { self.count >= count }
    }
}

/// A temporary directory with helpers to write fake /proc and /sys files; removed on deinit.
final class FakeFiles {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("imgfs-system-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }

    /// Replaces a file atomically, so the monitor never reads half a file.
    func write(_ name: String, _ text: String) throws {
        try text.write(toFile: path(name), atomically: true, encoding: .utf8)
    }

    /// Writes a meminfo file with the given sizes in MiB.
    func writeMeminfo(totalMiB: Int, availableMiB: Int) throws {
        try write(
            "meminfo",
            """
            MemTotal:       \(totalMiB * 1024) kB
            MemFree:        \(availableMiB * 512) kB
            MemAvailable:   \(availableMiB * 1024) kB
            Buffers:           12345 kB

            """)
    }
}

let testLogger = Logger(label: "imgfs.system.tests")

/// Polls `condition` every 5 ms until it holds (true) or `timeout` has passed (false).
func eventually(timeout: Duration = .seconds(1), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        await settle(.milliseconds(5))
    }
    return true
}

/// The thread ids of this process's threads named `name`; with `asleep`, only those blocked in a system call such as
/// `poll` (state S in /proc).
func threads(named name: String, asleep: Bool = false) -> Set<String> {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return Set(
        tasks.filter { task in
            let stat = (try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8)) ?? ""
            return stat.contains(asleep ? "(\(name)) S " : "(\(name)) ")
        })
}

/// Lets the monitor under test take a few readings (it reads its files every 10 ms): the one wait of these tests,
/// for checks that something does NOT happen, and the step of ``eventually(timeout:_:)``.
func settle(_ duration: Duration = .milliseconds(100)) async {
    try? await Task.sleep(for: duration)
}

let mebibyte = 1 << 20
