import Foundation
import ImgfsCore
import Synchronization
import Testing

@Suite("Image repository: large disk writes yield to readers")
struct DiskWriteYieldTests {
    let fetcher = ManualFetcher()
    let disk = FakeDisk()
    let url = try! ImageURL("http://127.0.0.1/a.png")
    let other = try! ImageURL("http://127.0.0.1/other.png")

    func repository(quiet: TimeInterval, maxDelay: TimeInterval) -> ImageRepository {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWriteYieldSize = 2  // the bodies below are 3 bytes
        configuration.diskWriteQuietPeriod = quiet
        configuration.diskWriteMaxDelay = maxDelay
        return ImageRepository(fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
                               configuration: configuration, logger: .init(label: "test"))
    }

    /// Keeps asking `repository` for a cached image every 10 ms for `seconds`.
    func keepReading(_ repository: ImageRepository, for seconds: TimeInterval) {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            repository.read(url, offset: 0, count: 1) { _ in }
            Thread.sleep(forTimeInterval: 0.01)
        }
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

    @Test("a small body is written at once, however busy the readers")
    func smallAtOnce() {
        var configuration = ImageRepository.Configuration()
        configuration.limits.requireImage = false
        configuration.diskWriteQuietPeriod = 60
        configuration.diskWriteMaxDelay = 60
        let repository = ImageRepository(fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
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
}
