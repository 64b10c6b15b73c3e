import Testing

@testable import imgfs

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
        #expect(ProgressLine(total: 7, pace: .bytes(expected: nil)).rendered().contains("ETA unknown"))
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

@Suite("Progress of imgfs prefetch by bytes")
struct PrefetchProgressTests {
    @Test("19 of 20 files done with 28 MiB still arriving: the ETA is the bytes to come at the byte rate")
    func byBytes() {
        let mebibyte = 1_048_576
        let line = ProgressLine(
            total: 20, done: 19, bytes: 2 * mebibyte, seconds: 2, pace: .bytes(expected: 30 * mebibyte))
        #expect(line.remainingSeconds == 28)
        #expect(line.fraction < 0.07, "the bar follows the bytes, not the count")
        #expect(
            line.rendered(columns: 120)
                == "[#---------------------]  19/20  2.0 MiB of 30.0 MiB  1.00 MiB/s  ETA 0:28  0 failed")
    }

    @Test("while a size is unknown the ETA says unknown")
    func unknown() {
        let line = ProgressLine(total: 20, done: 19, bytes: 2_000_000, seconds: 2, pace: .bytes(expected: nil))
        #expect(line.remainingSeconds == nil)
        #expect(line.rendered(columns: 120).contains("ETA unknown"))
        #expect(line.rendered(columns: 120).contains("  1.9 MiB  "), "no total: \(line.rendered(columns: 120))")
    }

    @Test("the tally knows the batch's bytes only once every file not finished has a size")
    func tally() {
        let tally = PrefetchTally(total: 3)
        tally.sized(index: 0, bytes: 100)
        tally.add(index: 0, bytes: 100)
        tally.finish(index: 0, url: "a", error: nil)
        tally.sized(index: 1, bytes: 5000)
        tally.add(index: 1, bytes: 1000)
        #expect(tally.snapshot().pace == .bytes(expected: nil), "the third file has not been opened")
        tally.sized(index: 2, bytes: 300)
        #expect(tally.snapshot().pace == .bytes(expected: 5400))
        tally.add(index: 2, bytes: 10)
        tally.finish(index: 2, url: "c", error: .system(5))
        #expect(tally.snapshot().pace == .bytes(expected: 5110), "a failed file counts what was read")
        #expect(tally.snapshot().bytes == 1110)
    }
}
