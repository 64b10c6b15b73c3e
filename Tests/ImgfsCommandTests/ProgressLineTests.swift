@testable import imgfs
import Testing

@Suite("Progress line and summary of a batch")
struct ProgressLineTests {
    @Test("the summary line gives successes, total, MiB, seconds, rate and failures")
    func summary() {
        let line = ProgressLine(total: 100, done: 100, failed: 2, bytes: 25 * 1_048_576 / 2, seconds: 3.2)
        #expect(line.summary == "prefetched 98 of 100 images (12.50 MiB in 3.2 s, 3.91 MiB/s), 2 failed")
        #expect(ProgressLine(total: 0).summary == "prefetched 0 of 0 images (0.00 MiB in 0.0 s, 0.00 MiB/s), 0 failed")
    }

    @Test("the redrawn line shows a bar, counts, bytes, rate, ETA and failures")
    func rendered() {
        let line = ProgressLine(total: 100, done: 25, failed: 1, bytes: 3 * 1_048_576, seconds: 2)
        #expect(
            line.rendered(columns: 120)
                == "[#####-----------------]  25/100  3.0 MiB  1.50 MiB/s  ETA 0:06  1 failed")
        #expect(line.rendered(columns: 120).hasPrefix(ProgressLine.bar(0.25, width: ProgressLine.barWidth)))
    }

    @Test("before anything finishes the ETA is unknown and the bar empty")
    func start() {
        let line = ProgressLine(total: 7)
        #expect(line.remainingSeconds == nil)
        #expect(line.rendered() == "[----------------------]  0/7  0 B  0.00 MiB/s  ETA --:--  0 failed")
    }

    @Test(
        "a narrow terminal narrows the bar, then drops it, then cuts the text: the line never wraps",
        arguments: [10, 40, 60, 70, 75, 80, 200])
    func narrow(_ columns: Int) {
        let line = ProgressLine(total: 1000, done: 500, failed: 12, bytes: 123_456_789, seconds: 61)
        let text = line.rendered(columns: columns)
        #expect(text.count <= columns - 1)
        let barEnd = text.hasPrefix("[") ? text.firstIndex(of: "]") : nil
        let barWidth = barEnd.map { text.distance(from: text.startIndex, to: $0) + 1 } ?? 0
        #expect(barWidth == 0 || (ProgressLine.minimumBarWidth...ProgressLine.barWidth).contains(barWidth))
        if columns >= 80 { #expect(text.hasSuffix("ETA 1:01  12 failed")) }
        if columns <= 40 { #expect(!text.hasPrefix("[")) }
    }

    @Test("the bar fills in proportion and stays within its width", arguments: [0.0, 0.1, 0.5, 0.99, 1.0, 1.5, -1])
    func bar(_ fraction: Double) {
        let bar = ProgressLine.bar(fraction, width: 12)
        #expect(bar.count == 12 && bar.hasPrefix("[") && bar.hasSuffix("]"))
        let filled = bar.filter { $0 == "#" }.count
        #expect(filled == min(max(Int(fraction * 10), 0), 10))
    }

    @Test("ETA and rate follow the pace so far")
    func pace() {
        let line = ProgressLine(total: 40, done: 10, bytes: 5 * 1_048_576, seconds: 5)
        #expect(line.remainingSeconds == 15)
        #expect(line.bytesPerSecond == 1_048_576)
        #expect(line.fraction == 0.25)
        #expect(ProgressLine(total: 0).fraction == 1)
        #expect(ProgressLine(total: 3, done: 3, failed: 5).succeeded == 0)
    }

    @Test(
        "clocks are m:ss below an hour and h:mm:ss above, rounded up",
        arguments: [
            (0.0, "0:00"), (0.2, "0:01"), (59.5, "1:00"), (61, "1:01"), (3599, "59:59"), (3723, "1:02:03"),
            (.infinity, "0:00")
        ])
    func clock(_ seconds: Double, _ expected: String) {
        #expect(ProgressLine.clock(seconds) == expected)
    }

    @Test("numbers have a fixed number of decimals")
    func fixed() {
        #expect(ProgressLine.fixed(3.14159, decimals: 2) == "3.14")
        #expect(ProgressLine.fixed(2, decimals: 1) == "2.0")
        #expect(ProgressLine.fixed(.nan, decimals: 1) == "0.0")
        #expect(ProgressLine.rate(1_572_864) == "1.50 MiB/s")
    }
}
