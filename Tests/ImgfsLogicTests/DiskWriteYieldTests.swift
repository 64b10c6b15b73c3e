import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Synchronization
import Testing

@Suite("Image repository: disk writes yield to readers and to running transfers")
struct DiskWriteYieldTests {
    let fetcher = ManualFetcher()
    let disk = FakeDisk()
    let url: ImageURL
    let other: ImageURL

    init() throws {
        url = try ImageURL("http://127.0.0.1/a.png")
        other = try ImageURL("http://127.0.0.1/other.png")
    }

    func repository(quiet: TimeInterval, maxDelay: TimeInterval) -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWrites.yieldSize = 2  // the bodies below are 3 bytes
        configuration.diskWrites.quietPeriod = quiet
        configuration.diskWrites.maxDelay = maxDelay
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
            configuration: configuration, logger: .init(label: "test"))
    }

    /// Keeps asking `repository` for a cached image every 10 ms for `seconds`.
    func keepReading(_ repository: ImageRepository, for seconds: TimeInterval) {
        Poll.repeatedly(for: seconds) { repository.read(url, offset: 0, count: 1) { _ in } }
    }

    /// Waits (up to 10 s) until the fake disk holds `url`'s record, without flushing.
    func waitForDiskRecord(of url: ImageURL) {
        Poll.until { disk.record(forKey: url.cacheKey) != nil }
    }

    @Test("a write waits while requests keep coming, and happens once they pause")
    func waitsForQuiet() {
        let repository = repository(quiet: 0.3, maxDelay: 30)
        _ = repository.prepare(url)
        fetcher.respond(0, body: [1, 2, 3])
        keepReading(repository, for: 0.6)
        #expect(disk.record(forKey: url.cacheKey) == nil, "not written while reads kept coming")
        repository.flushDiskWrites()
        #expect(disk.record(forKey: url.cacheKey)?.size == 3)
    }

    @Test("a large write that has begun pauses when requests come back, before its next step")
    func pausesBetweenSteps() {
        let repository = repository(quiet: 0.25, maxDelay: 30)
        let stepTimes = Mutex<[Int: Date]>([:])
        disk.beforeStep.withLock {
            $0 = { index in
                stepTimes.withLock { $0[index] = Date() }
                if index == 1 { repository.read(self.url, offset: 0, count: 1) { _ in } }
            }
        }
        _ = repository.prepare(url)
        fetcher.respond(0, body: [1, 2, 3])
        waitForDiskRecord(of: url)
        let times = stepTimes.withLock { $0 }
        #expect(disk.record(forKey: url.cacheKey)?.size == 3, "written once the requests paused")
        guard let second = times[1], let third = times[2] else {
            Issue.record("the fake disk saw no steps: \(times)")
            return
        }
        #expect(third.timeIntervalSince(second) >= 0.2, "the read between steps 1 and 2 paused the write")
    }

    @Test("a large write also waits while another transfer runs (readers blocked on it make no requests)")
    func largeWaitsForTransfers() {
        let repository = repository(quiet: 0.05, maxDelay: 30)
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.respond(0, body: [1, 2, 3])
        Poll.elapse(0.4)
        #expect(disk.record(forKey: url.cacheKey) == nil, "not written while a transfer runs, though no request came")
        fetcher.respond(1, body: [4, 5, 6, 7])
        waitForDiskRecord(of: url)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3, "written once the transfer ended, without a flush")
    }

    @Test("a small body is written at once, however busy the readers")
    func smallAtOnce() {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWrites.quietPeriod = 60
        configuration.diskWrites.maxDelay = 60
        let repository = ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
            configuration: configuration, logger: .init(label: "test"))
        _ = repository.prepare(url)
        fetcher.respond(0, body: [1, 2, 3])
        keepReading(repository, for: 0.3)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3)
    }

    @Test("a write waits no longer than the maximum delay, however busy the readers")
    func boundedDelay() {
        let repository = repository(quiet: 60, maxDelay: 0.2)
        _ = repository.prepare(url)
        fetcher.respond(0, body: [1, 2, 3])
        let started = Date()
        keepReading(repository, for: 1.0)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3, "written within the maximum delay")
        #expect(Date().timeIntervalSince(started) < 30)
    }

    func smallBodies(maxDelay: TimeInterval = 30, holdLimit: Int = 16 << 20) -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWrites.maxDelay = maxDelay
        configuration.diskWrites.holdLimit = holdLimit
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
            configuration: configuration, logger: .init(label: "test"))
    }

    @Test("a small body waits while another transfer runs, and is written when it ends")
    func smallWaitsForTransfers() {
        let repository = smallBodies()
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.respond(0, body: [1, 2, 3])
        Poll.elapse(0.3)
        #expect(disk.record(forKey: url.cacheKey) == nil, "not written while a transfer runs")
        let replies = Replies<[UInt8]?>()
        repository.read(url, offset: 0, count: 3) {
            replies.record(try? $0.get().bytes.copyBytes(offset: $0.get().offset, count: 3))
        }
        #expect(replies.all == [[1, 2, 3]], "served from memory meanwhile")
        #expect(fetcher.transfers.count == 2)
        fetcher.respond(1, body: [4, 5, 6, 7])
        repository.flushDiskWrites()
        #expect(disk.record(forKey: url.cacheKey)?.size == 3)
        #expect(disk.record(forKey: other.cacheKey)?.size == 4)
    }

    @Test("a small body waits for transfers no longer than the maximum delay")
    func smallBoundedDelay() {
        let repository = smallBodies(maxDelay: 0.2)
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.respond(0, body: [1, 2, 3])
        let started = Date()
        waitForDiskRecord(of: url)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3, "written within the maximum delay")
        #expect(Date().timeIntervalSince(started) < 5, "written while the other transfer still runs")
    }

    @Test("small bodies are written at once while those waiting exceed the hold limit")
    func holdLimit() {
        let repository = smallBodies(holdLimit: 2)  // the body is 3 bytes
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.respond(0, body: [1, 2, 3])
        waitForDiskRecord(of: url)
        #expect(disk.record(forKey: url.cacheKey)?.size == 3, "written although a transfer still runs")
    }

    @Test("small bodies that waited for a transfer are written together, in one batch, in the order they came")
    func smallBodiesBatched() throws {
        let repository = smallBodies()
        let urls = try ["a", "b", "c"].map { try ImageURL("http://127.0.0.1/\($0).png") }
        for url in urls + [other] { _ = repository.prepare(url) }
        for (index, body) in [[1], [2, 2], [3, 3, 3]].enumerated() {
            fetcher.respond(index, body: body.map(UInt8.init))
        }
        Poll.elapse(0.3)
        #expect(disk.batches.withLock { $0 }.isEmpty, "nothing written while a transfer runs")
        fetcher.respond(3, body: [4, 5, 6, 7])
        repository.flushDiskWrites()
        let batches = disk.batches.withLock { $0 }
        #expect(batches.first.map { Array($0.prefix(3)) } == urls.map(\.cacheKey), "the three waiting, in one batch")
        #expect(batches.joined().count == 4, "each body written once")
        #expect(urls.map { disk.record(forKey: $0.cacheKey)?.size } == [1, 2, 3])
    }

    @Test("a flush (at unmount) writes at once what waits for transfers or for a pause")
    func flushWritesAtOnce() {
        let repository = smallBodies()  // 30 s maximum delay
        _ = repository.prepare(url)
        _ = repository.prepare(other)
        fetcher.respond(0, body: [1, 2, 3])
        let started = Date()
        repository.flushDiskWrites()
        #expect(Date().timeIntervalSince(started) < 5, "the transfer still runs; the write did not wait for it")
        #expect(disk.record(forKey: url.cacheKey)?.size == 3)
    }
}
