import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Testing

@Suite("List warming", .serialized)
struct ListWarmerTests {
    let fetcher = ManualFetcher()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imgfs-warm-\(UUID().uuidString)")

    /// A store with list `l` of `count` entries (entry 3's URL repeated at the end when `repeat`), marked for warming,
    /// and a warmer over it.
    func setUp(count: Int, window: Int, budget: Int = 1 << 30, repeated: Bool = false) throws -> (ListWarmer, ListStore)
    {
        let store = ListStore(directory: directory)
        var entries = try (1...count).map {
            ImageList.Entry(name: "\($0)", url: try ImageURL("http://127.0.0.1/\($0).png"))
        }
        if repeated { entries.append(.init(name: "again", url: try ImageURL("http://127.0.0.1/3.png"))) }
        try store.save(ImageList(name: "l", entries: entries))
        try ListWarmMark.set(true, list: "l", in: store)
        let warmer = ListWarmer(
            store: store, repository: .forTests(fetcher: fetcher), window: window, budget: budget,
            logger: .init(label: "test"))
        return (warmer, store)
    }

    @Test("a marked list is loaded in list order at background priority, never more than the window at once")
    func windowAndOrder() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (warmer, _) = try setUp(count: 10, window: 3, repeated: true)
        defer { warmer.stop() }
        warmer.listLookedUp("l")
        #expect(Poll.until(timeout: 5) { fetcher.transfers.count == 3 })
        Poll.elapse(0.1)
        #expect(fetcher.transfers.count == 3, "the window holds")
        #expect(fetcher.transfers.allSatisfy { $0.request.priority == .background })
        for index in 0..<10 {
            #expect(Poll.until(timeout: 5) { fetcher.transfers.count > index })
            fetcher.respond(index, body: [UInt8](repeating: 7, count: 100))
        }
        #expect(Poll.until(timeout: 5) { warmer.counters().first?.counters.ended == true })
        #expect(fetcher.transfers.map(\.url.string) == (1...10).map { "http://127.0.0.1/\($0).png" })
        let counters = try #require(warmer.counters().first?.counters)
        #expect(counters.entries == 11 && counters.fetched == 10 && counters.cached == 1 && counters.bytes == 1100)
        warmer.listLookedUp("l")
        Poll.elapse(0.2)
        #expect(fetcher.transfers.count == 10, "a list gone through is not warmed again")
    }

    @Test("an unmarked list is not warmed; a warm stops at its budget")
    func unmarkedAndBudget() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (warmer, store) = try setUp(count: 10, window: 1, budget: 250)
        defer { warmer.stop() }
        try ListWarmMark.set(false, list: "l", in: store)
        warmer.listLookedUp("l")
        Poll.elapse(0.2)
        #expect(fetcher.transfers.isEmpty)
        try ListWarmMark.set(true, list: "l", in: store)
        warmer.listLookedUp("l")
        for index in 0..<3 {
            #expect(Poll.until(timeout: 5) { fetcher.transfers.count > index })
            fetcher.respond(index, body: [UInt8](repeating: 7, count: 100))
        }
        #expect(Poll.until(timeout: 5) { warmer.counters().first?.counters.ended == true })
        #expect(fetcher.transfers.count == 3, "300 bytes gone through: past the budget of 250")
    }

    @Test("removing the list or its mark stops the warm and calls off what it loads; stop() ends everything")
    func removalAndStop() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (warmer, store) = try setUp(count: 10, window: 2)
        warmer.listLookedUp("l")
        #expect(Poll.until(timeout: 5) { fetcher.transfers.count == 2 })
        try ListWarmMark.set(false, list: "l", in: store)
        #expect(Poll.until(timeout: 5) { fetcher.cancelCount == 2 }, "both transfers called off")
        #expect(warmer.counters().first?.counters.ended == true)
        // A new mark and a new list file: warmed again from its first entry.
        Thread.sleep(forTimeInterval: 0.02)
        try ListWarmMark.set(true, list: "l", in: store)
        try store.save(ImageList(name: "l", entries: [.init(name: "x", url: try ImageURL("http://127.0.0.1/x.png"))]))
        warmer.listLookedUp("l")
        #expect(Poll.until(timeout: 5) { fetcher.transfers.count == 3 })
        #expect(fetcher.transfers.last?.url.string == "http://127.0.0.1/x.png")
        warmer.stop()
        #expect(fetcher.cancelCount == 3)
        warmer.listLookedUp("l")
        Poll.elapse(0.2)
        #expect(fetcher.transfers.count == 3, "nothing starts after stop()")
    }
}
