import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// Lookups that wait for the size (where the kernel runs lookups in parallel), the preload handed over with the first
/// open, and the extended-attribute namespaces imgfs does not support.
@Suite("Filesystem logic: waiting lookups and preloads")
struct WaitingLookupTests {
    private let fetcher = ManualFetcher()
    private let repository: ImageRepository
    private let filesystem: ImageFilesystem

    init() {
        repository = ImageRepository.forTests(fetcher: fetcher)
        filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(),
            logger: .init(label: "test"))
    }

    private func lookup(_ url: String, _ replies: Replies<Result<Entry, FilesystemError>>) {
        filesystem.lookup(parent: InodeTable.imagesInode, name: Array(NameCodec.encode(url).utf8), waitForSize: true) {
            replies.record($0)
        }
    }

    @Test("a waiting lookup answers once the response is known, with the size and cacheable attributes")
    func waitsForSize() throws {
        let replies = Replies<Result<Entry, FilesystemError>>()
        lookup("http://127.0.0.1/a.png", replies)
        #expect(replies.all.isEmpty, "no answer before the response")
        #expect(fetcher.transfers.count == 1)
        fetcher.respond(body: [1, 2, 3, 4])
        let entry = try #require(replies.all.first).get()
        #expect(entry.attributes.size == 4)
        #expect(entry.attributeTimeout > 0)
        #expect(replies.all.count == 1)
        #expect(repository.statistics().counters.joined == 0, "one lookup is one caller of its transfer")
    }

    @Test("a failure found while a lookup waits fails the lookup: the name does not exist; later lookups fail at once")
    func failureFailsLookup() throws {
        let replies = Replies<Result<Entry, FilesystemError>>()
        lookup("http://127.0.0.1/gone.png", replies)
        fetcher.fail(0, .httpStatus(404))
        #expect(replies.all.count == 1)
        #expect(replies.all.first.map { (try? $0.get()) == nil } == true)
        if case .failure(let error)? = replies.all.first { #expect(error == .notFound) }
        let again = Replies<Result<Entry, FilesystemError>>()
        lookup("http://127.0.0.1/gone.png", again)
        if case .failure(let error)? = again.all.first { #expect(error == .notFound) } else { Issue.record("answered") }
        #expect(fetcher.transfers.count == 1, "remembered: no second request")
    }

    @Test("a name looked up before its failure fails getattr and open with the error every time, never size 0")
    func knownFailureFailsGetattr() throws {
        let inode = try filesystem.lookup(
            parent: InodeTable.imagesInode,
            name: Array(NameCodec.encode("http://127.0.0.1/x.png").utf8)
        ).get().attributes.inode
        fetcher.fail(0, .tooLarge(size: 5000, limit: 10))
        for _ in 0..<2 {
            let stats = Replies<Result<Entry, FilesystemError>>()
            filesystem.getattr(inode) { stats.record($0) }
            if case .failure(let error)? = stats.all.first {
                #expect(error == .fileTooLarge)
            } else {
                Issue.record("answered")
            }
        }
        let opens = Replies<FilesystemError?>()
        filesystem.open(inode, forWriting: false, caller: .root) { result in
            if case .failure(let error) = result { opens.record(error) } else { opens.record(nil) }
        }
        #expect(opens.all == [.fileTooLarge])
    }

    @Test("the first open of a complete small image hands its bytes over once; a new inode gets them again")
    func preloadOnce() throws {
        let replies = Replies<Result<Entry, FilesystemError>>()
        lookup("http://127.0.0.1/p.png", replies)
        fetcher.respond(body: [7, 8, 9])
        let inode = try #require(replies.all.first).get().attributes.inode
        let opens = Replies<ImageFilesystem.OpenFile?>()
        filesystem.open(inode, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        filesystem.open(inode, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        #expect(opens.all.count == 2)
        let first = try #require(opens.all[0]?.preload).bytes
        #expect(first.bytes.copyBytes(offset: first.offset, count: first.count) == [7, 8, 9])
        #expect(opens.all[1]?.preload == nil, "the kernel has the pages already")
        filesystem.forget(inode, count: 1)
        lookup("http://127.0.0.1/p.png", replies)
        let again = try #require(replies.all.last).get().attributes.inode
        filesystem.open(again, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        #expect(opens.all.last??.preload != nil, "a new inode gets the bytes again")
    }

    @Test("a new body makes an earlier preload stale, and the next open hands over the new bytes")
    func preloadAfterChange() throws {
        let clock = TestClock()
        let repository = ImageRepository.forTests(
            fetcher: fetcher, now: { [clock] in clock.now },
            adjust: { $0.expiry = ExpiryPolicy(lifetime: 60, honorsCacheControl: false) })
        let filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(),
            logger: .init(label: "test"))
        let replies = Replies<Result<Entry, FilesystemError>>()
        filesystem.lookup(
            parent: InodeTable.imagesInode, name: Array(NameCodec.encode("http://127.0.0.1/c.png").utf8),
            waitForSize: true
        ) { replies.record($0) }
        fetcher.respond(0, body: [1, 2, 3], etag: "\"v1\"")
        let inode = try #require(replies.all.first).get().attributes.inode
        let opens = Replies<ImageFilesystem.OpenFile?>()
        filesystem.open(inode, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        let old = try #require(opens.all.first??.preload)
        #expect(filesystem.preloadIsCurrent(inode, generation: old.generation))
        clock.advance(120)
        filesystem.open(inode, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        #expect(fetcher.transfers.count == 2, "the expired copy is revalidated")
        fetcher.respond(1, body: [4, 5, 6], etag: "\"v2\"")
        #expect(!filesystem.preloadIsCurrent(inode, generation: old.generation), "the old bytes must be dropped")
        // That open was answered at the new head, before its body (no preload then); the next one has it.
        filesystem.open(inode, forWriting: false, caller: .root) { opens.record(try? $0.get()) }
        let new = try #require(opens.all.last??.preload).bytes
        #expect(new.bytes.copyBytes(offset: new.offset, count: new.count) == [4, 5, 6])
    }

    @Test("security.* and system.* attributes are not supported (EOPNOTSUPP); other unknown names are ENODATA")
    func attributeNamespaces() throws {
        let replies = Replies<Result<Entry, FilesystemError>>()
        lookup("http://127.0.0.1/x.png", replies)
        fetcher.respond(body: [1])
        let inode = try #require(replies.all.first).get().attributes.inode
        #expect(filesystem.extendedAttribute(inode, name: "security.selinux") == .failure(.attributesNotSupported))
        #expect(
            filesystem.extendedAttribute(inode, name: "system.posix_acl_access") == .failure(.attributesNotSupported))
        #expect(filesystem.extendedAttribute(inode, name: "user.other") == .failure(.noAttribute))
        #expect(filesystem.extendedAttribute(inode, name: "user.imgfs.size") == .success(Array("1".utf8)))
        #expect(filesystem.extendedAttribute(999_999, name: "security.selinux") == .failure(.stale))
    }
}
