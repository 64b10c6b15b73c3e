import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// ``ImageFilesystem/readDirectoryPlus(_:from:limit:add:)``: which entries of a listing carry a lookup's answer (only
/// those known without the network, answered as a lookup answers them), that each such entry counts exactly one
/// kernel reference, that an entry the reply had no room for counts none, and that nothing is fetched.
@Suite("Listings with attributes")
struct DirectoryPlusTests {
    private let fetcher = ManualFetcher()
    private let filesystem: ImageFilesystem
    private let store: ListStore
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("plus-\(UUID())")
    static let base = "http://127.0.0.1/p"
    static let names = ["a.png", "b.png", "c.png", "d.png", "e.png", "f.png"]
    static let modified = Date(timeIntervalSince1970: 1_700_000_000)

    init() throws {
        let repository = ImageRepository.forTests(fetcher: fetcher)
        store = ListStore(directory: directory, writesFacts: true)
        let lists = ListDirectories(
            store: store, readAhead: ReadAhead(depth: 0, repository: repository),
            hosts: HostDirectories(tiers: repository.tiers))
        filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(), logger: .init(label: "test"), lists: lists)
        let urls = try Self.names.map { try ImageURL("\(Self.base)/\($0)") }
        try store.save(ImageList(name: "l", entries: zip(Self.names, urls).map { .init(name: $0, url: $1) }))
        let facts = try #require(store.listWithFacts("l")?.facts)
        // a, b: probed; c: failed; d: never looked at; e: probed, and cached since with another size; f: probed, and
        // being fetched now.
        for (index, size) in [(0, 100), (1, 200), (4, 500), (5, 600)] {
            facts.record(
                EntryFacts(size: size, header: nil, modified: Self.modified, etag: nil), at: index,
                urlText: urls[index].string)
        }
        facts.record(EntryFacts(failure: "HTTP 500"), at: 2, urlText: urls[2].string)
        let cached = try lookUp(InodeTable.imagesInode, NameCodec.encode(urls[4].string))
        fetcher.respond(0, body: [1, 2, 3, 4, 5, 6, 7], cacheControl: "max-age=3600")
        filesystem.forget(cached.attributes.inode, count: 1)
        let fetching = try lookUp(InodeTable.imagesInode, NameCodec.encode(urls[5].string))
        filesystem.forget(fetching.attributes.inode, count: 1)
        #expect(fetcher.transfers.count == 2)
    }

    private func lookUp(_ parent: UInt64, _ name: String) throws -> Entry {
        try filesystem.lookup(parent: parent, name: Array(name.utf8)).get()
    }

    /// Whether the kernel would still hold a reference to `inode` (getattr of a forgotten inode is ESTALE).
    private func isKnown(_ inode: UInt64) -> Bool {
        let answer = Replies<Bool>()
        filesystem.getattr(inode) { answer.record((try? $0.get()) != nil) }
        return answer.all == [true]
    }

    private func listOpened() throws -> (inode: UInt64, handle: UInt64) {
        let list = try lookUp(InodeTable.listsInode, "l").attributes.inode
        return (list, try filesystem.openDirectory(list, caller: .root).get())
    }

    @Test("probed and settled entries carry a lookup's answer; failed, unknown and fetching ones do not")
    func whichEntries() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (list, handle) = try listOpened()
        var offers: [ImageFilesystem.EntryOffer] = []
        filesystem.readDirectoryPlus(handle, from: 0) {
            offers.append($0)
            return true
        }
        #expect(offers.map(\.entry.name) == [".", ".."] + Self.names)
        let sizes = offers.map { $0.lookup?.attributes.size }
        #expect(sizes == [nil, nil, 100, 200, nil, nil, 7, nil], "the cached copy answers, not the older facts")
        #expect(offers.map(\.next) == Array(1...8))
        // Each answer is the one a lookup gives now (which counts a second reference).
        for offer in offers {
            guard let given = offer.lookup else { continue }
            let looked = try lookUp(list, offer.entry.name)
            #expect(looked == given, "\(offer.entry.name)")
            #expect(given.entryTimeout > 1 && given.attributeTimeout > 0, "kept until the list changes")
            filesystem.forget(given.attributes.inode, count: 1)
            #expect(isKnown(given.attributes.inode), "the listing's reference is still held")
            filesystem.forget(given.attributes.inode, count: 1)
            #expect(!isKnown(given.attributes.inode), "exactly one reference per listed entry")
        }
        #expect(fetcher.transfers.count == 2, "a listing fetches nothing")
        filesystem.closeDirectory(handle)
    }

    @Test("an entry the reply had no room for is not counted, and the next read starts with it")
    func fullReply() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (list, handle) = try listOpened()
        var taken: [ImageFilesystem.EntryOffer] = []
        var refused: [String] = []
        filesystem.readDirectoryPlus(handle, from: 0) { offer in
            guard taken.count < 3 else {
                refused.append(offer.entry.name)
                return false
            }
            taken.append(offer)
            return true
        }
        #expect(taken.map(\.entry.name) == [".", "..", "a.png"] && refused == ["b.png"], "offers stop at the refusal")
        let first = try #require(taken.last?.lookup)
        // b.png was offered with an answer and refused: no reference is left of it.
        let looked = try lookUp(list, "b.png")
        filesystem.forget(looked.attributes.inode, count: 1)
        #expect(!isKnown(looked.attributes.inode))
        // Resumed where the reply ended: b.png first, with its answer.
        var rest: [ImageFilesystem.EntryOffer] = []
        filesystem.readDirectoryPlus(handle, from: taken.last!.next) {
            rest.append($0)
            return true
        }
        #expect(rest.map(\.entry.name) == Array(Self.names.dropFirst()))
        #expect(rest.first?.lookup?.attributes.size == 200)
        filesystem.forget(first.attributes.inode, count: 1)
        #expect(!isKnown(first.attributes.inode))
        filesystem.closeDirectory(handle)
    }

    @Test("a list's entries are kept long; a lookup that finds the list replaced has the kernel drop its name")
    func replacedList() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let dropped = Replies<String>()
        filesystem.onInvalidateEntry { parent, name in
            if parent == InodeTable.listsInode { dropped.record(name) }
        }
        let list = try lookUp(InodeTable.listsInode, "l")
        #expect(list.entryTimeout <= 1, "a list's own name is kept a second")
        #expect(try lookUp(list.attributes.inode, "a.png").entryTimeout > 1)
        _ = try lookUp(InodeTable.listsInode, "l")
        let url = try ImageURL("\(Self.base)/other.png")
        try store.save(ImageList(name: "l", entries: [.init(name: "a.png", url: url)]))
        _ = try lookUp(InodeTable.listsInode, "l")
        let told = (0..<200).contains { _ in
            usleep(10_000)
            return dropped.all == ["l"]
        }
        #expect(told, "\(dropped.all)")
        _ = try lookUp(InodeTable.listsInode, "l")
        usleep(50_000)
        #expect(dropped.all == ["l"], "once per new version")
    }

    @Test("hosts/ and a host's folder: hosts and cached images carry a lookup's answer")
    func hosts() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let handle = try filesystem.openDirectory(InodeTable.hostsInode, caller: .root).get()
        var hostOffers: [ImageFilesystem.EntryOffer] = []
        filesystem.readDirectoryPlus(handle, from: 0) {
            hostOffers.append($0)
            return true
        }
        filesystem.closeDirectory(handle)
        #expect(hostOffers.map(\.entry.name) == [".", "..", "127.0.0.1"])
        let host = try #require(hostOffers.last?.lookup)
        let hostLooked = try lookUp(InodeTable.hostsInode, "127.0.0.1")
        #expect(host.attributes.kind == .directory && host == hostLooked)
        let images = try filesystem.openDirectory(host.attributes.inode, caller: .root).get()
        var imageOffers: [ImageFilesystem.EntryOffer] = []
        filesystem.readDirectoryPlus(images, from: 0) {
            imageOffers.append($0)
            return true
        }
        filesystem.closeDirectory(images)
        #expect(imageOffers.count == 3, "the one cached image: \(imageOffers.map(\.entry.name))")
        let image = try #require(imageOffers.last?.lookup)
        #expect(image.attributes.size == 7 && image.entryTimeout <= 1 && host.entryTimeout <= 1)
        let imageLooked = try lookUp(host.attributes.inode, imageOffers.last!.entry.name)
        #expect(image == imageLooked)
        #expect(fetcher.transfers.count == 2)
    }
}
