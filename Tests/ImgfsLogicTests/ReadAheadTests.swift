import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Read-ahead")
struct ReadAheadTests {
    let fetcher = ManualFetcher()

    func setUp(depth: Int) throws -> (ReadAhead, ImageList) {
        let (readAhead, list, _) = try setUpWithRepository(depth: depth)
        return (readAhead, list)
    }

    func setUpWithRepository(depth: Int) throws -> (ReadAhead, ImageList, ImageRepository) {
        let repository = ImageRepository.forTests(fetcher: fetcher)
        let entries = try (1...100).map {
            ImageList.Entry(name: "\($0)", url: try ImageURL("http://127.0.0.1/\($0).png"))
        }
        return (ReadAhead(depth: depth, repository: repository), ImageList(name: "l", entries: entries), repository)
    }

    private var requested: [String] { fetcher.transfers.map { String($0.url.string.dropFirst(17)) } }

    @Test("opening entry i starts i+1...i+K once each, at read-ahead priority; depth 0 starts nothing")
    func startsAhead() throws {
        let (readAhead, list) = try setUp(depth: 3)
        readAhead.opened(list, index: 0)
        #expect(requested == ["2.png", "3.png", "4.png"])
        #expect(fetcher.transfers.allSatisfy { $0.request.priority == .readAhead })
        readAhead.opened(list, index: 1)
        #expect(requested == ["2.png", "3.png", "4.png", "5.png"], "pending ones are not started again")
        #expect(readAhead.counters().first?.counters.used == 1)
        let (off, offList) = try setUp(depth: 0)
        off.opened(offList, index: 0)
        #expect(fetcher.transfers.count == 4)
    }

    @Test("a jump gives up the read-ahead nobody opened, never a transfer whose file is open")
    func jumpCancels() throws {
        let (readAhead, list) = try setUp(depth: 3)
        readAhead.opened(list, index: 0)
        readAhead.opened(list, index: 5)  // within 2K: no jump
        #expect(fetcher.cancelCount == 0)
        let open = list.entries[6].url(keying: nil)!
        readAhead.opened(list, index: 50, openHandles: { $0 == open ? 1 : 0 })
        #expect(fetcher.cancelCount == 5, "2, 3, 4, 8, 9 given up; 7 (open) kept")
        #expect(readAhead.counters().first?.counters.wasted == 6)
        #expect(requested.suffix(3) == ["52.png", "53.png", "54.png"])
    }

    @Test("the counters add up: started = used + wasted + pending; a cached entry counts in none of them")
    func countersAddUp() throws {
        let (readAhead, list, repository) = try setUpWithRepository(depth: 3)
        let cached = list.entries[2].url(keying: nil)!
        _ = repository.prepare(cached)
        fetcher.respond(0, body: [1, 2, 3])
        readAhead.opened(list, index: 0)  // ahead: 2, 3 (cached), 4
        readAhead.opened(list, index: 1)  // 2 used; ahead 3, 4, 5
        readAhead.opened(list, index: 2)  // the cached 3: not read-ahead's; ahead 4, 5, 6
        readAhead.opened(list, index: 50)  // a jump: 4, 5, 6 wasted; ahead 52, 53, 54
        let counters = try #require(readAhead.counters().first?.counters)
        #expect(counters.started == 7 && counters.used == 1, "\(counters)")
        #expect(counters.wasted == 3 && counters.pending == 3, "\(counters)")
        #expect(counters.started == counters.used + counters.wasted + counters.pending)
        #expect(requested.filter { $0 == "3.png" }.count == 1, "the cached entry was never fetched again")
    }
}
