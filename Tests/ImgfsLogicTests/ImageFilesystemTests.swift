import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import Testing

@Suite("Filesystem logic")
struct ImageFilesystemTests {
    private let fetcher = ManualFetcher()
    private let filesystem: ImageFilesystem
    private let registry = LongNameRegistry()

    init() {
        let repository = ImageRepository.forTests(fetcher: fetcher)
        filesystem = ImageFilesystem(repository: repository, registry: registry, logger: .init(label: "test"))
    }

    private func lookupImage(_ url: String) -> Result<Entry, FilesystemError> {
        filesystem.lookup(parent: InodeTable.imagesInode, name: Array(NameCodec.encode(url).utf8))
    }

    @Test("lookup starts the transfer and answers at once, with no attribute caching until the size is known")
    func lookupNeverWaits() throws {
        let entry = try lookupImage("http://127.0.0.1/a.png").get()
        #expect(fetcher.transfers.count == 1)
        #expect(entry.attributeTimeout == 0)
        #expect(entry.attributes.permissions == 0o444)
        let sizes = Replies<Int>()
        filesystem.getattr(entry.attributes.inode) { sizes.record((try? $0.get())?.attributes.size ?? -1) }
        #expect(sizes.all.isEmpty, "getattr waits for the header")
        fetcher.respond(body: [1, 2, 3])
        #expect(sizes.all == [3])
        let again = try lookupImage("http://127.0.0.1/a.png").get()
        #expect(again.attributes.inode == entry.attributes.inode)
        #expect(again.attributes.size == 3 && again.attributeTimeout > 0)
    }

    @Test("bad names get their errors and fetch nothing")
    func badNames() {
        #expect(filesystem.lookup(parent: InodeTable.imagesInode, name: Array("hello".utf8)) == .failure(.notFound))
        #expect(lookupImage("ftp://127.0.0.1/a.png") == .failure(.notFound))
        #expect(
            filesystem.lookup(parent: InodeTable.imagesInode, name: Array("http%3G".utf8)) == .failure(.invalidName))
        #expect(lookupImage("http://u:p@127.0.0.1/a.png") == .failure(.accessDenied))
        #expect(
            filesystem.lookup(
                parent: InodeTable.imagesInode, name: Array(("~" + String(repeating: "0", count: 64)).utf8))
                == .failure(.notFound))
        #expect(filesystem.lookup(parent: InodeTable.rootInode, name: Array("other".utf8)) == .failure(.notFound))
        #expect(fetcher.transfers.isEmpty)
    }

    @Test("a known failure answers lookups with its error; open fails with it too")
    func failures() throws {
        let entry = try lookupImage("http://127.0.0.1/gone.png").get()
        let opens = Replies<FilesystemError?>()
        filesystem.open(entry.attributes.inode, forWriting: false, caller: .root) { result in
            if case .failure(let error) = result { opens.record(error) } else { opens.record(nil) }
        }
        fetcher.transfers[0].observer.transferDidComplete(error: .httpStatus(403))
        #expect(opens.all == [.accessDenied])
        filesystem.open(entry.attributes.inode, forWriting: true, caller: .root) { result in
            if case .failure(let error) = result { opens.record(error) } else { opens.record(nil) }
        }
        #expect(opens.all == [.accessDenied, .readOnly])
    }

    @Test("an open of a large image still arriving and open nowhere else is marked arriving alone; no other open is")
    func arrivingAlone() throws {
        let size = ImageFilesystem.preloadLimit + 4096
        let inode = try lookupImage("http://127.0.0.1/large.png").get().attributes.inode
        let opens = Replies<Bool?>()
        let handles = Replies<UInt64>()
        let open = {
            self.filesystem.open(inode, forWriting: false, caller: .root) {
                opens.record((try? $0.get())?.arrivingAlone)
                if let handle = (try? $0.get())?.handle { handles.record(handle) }
            }
        }
        open()
        let observer = fetcher.transfers[0].observer
        _ = observer.transferDidReceive(head: ResponseHead(status: 200, contentLength: size, contentType: "image/png"))
        let half = [UInt8](repeating: 7, count: size / 2)
        half.withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        open()  // next to the first one
        #expect(opens.all == [true, false])
        filesystem.release(inode, handle: handles.all[0])
        filesystem.release(inode, handle: handles.all[1])
        open()  // alone again, still arriving
        filesystem.release(inode, handle: handles.all[2])
        let rest = [UInt8](repeating: 8, count: size - half.count)
        rest.withUnsafeBytes { _ = observer.transferDidReceive(bytes: $0) }
        open()  // every byte has arrived (the transfer has not reported its end yet)
        #expect(opens.all == [true, false, true, false])
        let small = try lookupImage("http://127.0.0.1/small.png").get().attributes.inode
        filesystem.open(small, forWriting: false, caller: .root) { opens.record((try? $0.get())?.arrivingAlone) }
        let smallObserver = fetcher.transfers[1].observer
        _ = smallObserver.transferDidReceive(
            head: ResponseHead(status: 200, contentLength: 2048, contentType: "image/png"))
        half[..<1024].withUnsafeBytes { _ = smallObserver.transferDidReceive(bytes: $0) }
        #expect(opens.all == [true, false, true, false, false], "a small image is never read past the page cache")
    }

    @Test("chunked names resolve to the same inode as the plain name, and register the digest name")
    func chunkedAndDigestNames() throws {
        let long = try ImageURL("http://127.0.0.1/a.png?sig=" + String(repeating: "%", count: 400))
        guard case .digest(let digest, let chunks) = ImagePath.form(for: long, mountPointLength: 3900) else {
            Issue.record("expected a digest form")
            return
        }
        #expect(filesystem.lookup(parent: InodeTable.imagesInode, name: Array(digest.utf8)) == .failure(.notFound))
        var parent = try filesystem.lookup(parent: InodeTable.imagesInode, name: Array("+".utf8)).get().attributes.inode
        for chunk in chunks.dropLast() {
            let entry = try filesystem.lookup(parent: parent, name: Array(chunk.utf8)).get()
            #expect(entry.attributes.kind == .directory)
            parent = entry.attributes.inode
        }
        let file = try filesystem.lookup(parent: parent, name: Array(chunks.last!.utf8)).get()
        #expect(file.attributes.kind == .file)
        let byDigest = try filesystem.lookup(parent: InodeTable.imagesInode, name: Array(digest.utf8)).get()
        #expect(byDigest.attributes.inode == file.attributes.inode)
        #expect(try lookupImage(long.string).get().attributes.inode == file.attributes.inode)
        #expect(fetcher.transfers.count == 1)
    }

    @Test("img/ lists completed images by the names that open them")
    func listing() throws {
        _ = try lookupImage("http://127.0.0.1/b.png").get()
        _ = try lookupImage("http://127.0.0.1/pending.png").get()
        fetcher.respond(0, body: [9])
        let handle = try filesystem.openDirectory(InodeTable.imagesInode, caller: .root).get()
        let names = filesystem.readDirectory(handle, from: 0).map(\.entry.name)
        #expect(names == [".", "..", NameCodec.encode("http://127.0.0.1/b.png")])
        #expect(
            filesystem.readDirectory(handle, from: 2).map(\.entry.name) == [NameCodec.encode("http://127.0.0.1/b.png")])
        filesystem.closeDirectory(handle)
    }

    /// A filesystem whose disk cache holds 1,000 one-byte images, `img/` open as `handle`, record reads counted from 0.
    private func thousandCachedImagesListed() throws -> (ImageFilesystem, FakeDisk, UInt64) {
        let disk = FakeDisk()
        for index in 0..<1000 {
            let url = try ImageURL("http://127.0.0.1/\(index).png")
            let record = CacheRecord(
                key: url.cacheKey, url: url.string, size: 1, contentType: nil, etag: nil,
                lastModified: nil, fetchedAt: Date(), expiresAt: .distantFuture)
            try [UInt8]([1]).withUnsafeBytes { _ = try disk.store(record, body: $0) }
        }
        let repository = ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: disk,
            configuration: .init(), logger: .init(label: "test"))
        let filesystem = ImageFilesystem(repository: repository, registry: registry, logger: .init(label: "test"))
        let handle = try filesystem.openDirectory(InodeTable.imagesInode, caller: .root).get()
        disk.resetRecordReads()
        return (filesystem, disk, handle)
    }

    @Test("a listing of many cached images is read in pages, loading only each page's records")
    func pagedListing() throws {
        let (filesystem, disk, handle) = try thousandCachedImagesListed()
        var names: [String] = []
        var offset = 0
        while true {
            let page = filesystem.readDirectory(handle, from: offset, limit: 100)
            guard let last = page.last else { break }
            #expect(page.count <= 100)
            names += page.map(\.entry.name)
            offset = last.next
        }
        #expect(names.count == 1002)
        #expect(Set(names).count == 1002)
        #expect(names.contains(NameCodec.encode("http://127.0.0.1/999.png")))
        #expect(disk.recordReads == 1000, "one record read per listed entry, page by page")
        #expect(fetcher.transfers.isEmpty, "listing fetches nothing")
    }

    @Test("pages sized by the reply: each holds what fits, every entry comes once, few records are read in vain")
    func pagesByReplySize() throws {
        let (filesystem, disk, handle) = try thousandCachedImagesListed()
        var names: [String] = []
        var offset = 0
        var pages = 0
        while true {
            let page = filesystem.readDirectory(handle, from: offset, replySize: 4096)
            guard let last = page.last else { break }
            pages += 1
            #expect(page.reduce(0) { $0 + $1.entry.name.utf8.count + 32 } <= 4096)
            #expect(page.count > 40, "a page is filled, not cut at a fixed count")
            names += page.map(\.entry.name)
            offset = last.next
        }
        #expect(names.count == 1002 && Set(names).count == 1002)
        #expect(disk.recordReads <= 1000 + pages, "at most one record per page read and not listed")
    }
}
