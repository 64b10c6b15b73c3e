import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Testing

/// Issue 36, items 4 and 5: on a mount other users can reach, only the owner (the daemon's user) and root change the
/// caches, list what is cached and read the statistics; others open what they name.
@Suite("Callers")
struct CallerAccessTests {
    private let fetcher = ManualFetcher()
    private let filesystem: ImageFilesystem
    private let owner = Caller(uid: 1000), other = Caller(uid: 65534)
    private let url = "http://127.0.0.1/a.png?token=secret"

    init() {
        let repository = ImageRepository.forTests(fetcher: fetcher)
        var settings = ImageFilesystem.Configuration()
        settings.owner = 1000
        filesystem = ImageFilesystem(
            repository: repository, registry: LongNameRegistry(), configuration: settings, logger: .init(label: "test"))
    }

    /// The names `caller` gets from listing img/, or the error.
    private func listing(by caller: Caller) -> Result<[String], FilesystemError> {
        filesystem.openDirectory(InodeTable.imagesInode, caller: caller).map { handle in
            defer { filesystem.closeDirectory(handle) }
            return filesystem.readDirectory(handle, from: 2).map(\.entry.name)
        }
    }

    private func open(_ inode: UInt64, by caller: Caller) -> Result<ImageFilesystem.OpenFile, FilesystemError>? {
        let opens = Replies<Result<ImageFilesystem.OpenFile, FilesystemError>>()
        filesystem.open(inode, forWriting: false, caller: caller) { opens.record($0) }
        return opens.all.first
    }

    private func cacheImage() throws -> UInt64 {
        let entry = try filesystem.lookup(parent: InodeTable.imagesInode, name: Array(NameCodec.encode(url).utf8)).get()
        fetcher.respond(body: [1, 2, 3])
        return entry.attributes.inode
    }

    @Test("another user cannot list img/, evict, purge or read the statistics; the image stays cached")
    func otherUser() throws {
        let inode = try cacheImage()
        let name = Array(NameCodec.encode(url).utf8)
        #expect(listing(by: other) == .failure(.accessDenied))
        #expect(filesystem.unlink(parent: InodeTable.imagesInode, name: name, caller: other).isFailure(.accessDenied))
        let purge = filesystem.setExtendedAttribute(
            InodeTable.controlInode, name: "user.imgfs.purge", value: Array("disk".utf8), caller: other)
        #expect(purge.isFailure(.accessDenied))
        #expect(open(GeneratedFile.statistics.inode, by: other).map { $0.isFailure(.accessDenied) } == true)
        #expect(open(GeneratedFile.metrics.inode, by: other).map { $0.isFailure(.accessDenied) } == true)
        #expect(listing(by: owner) == .success([NameCodec.encode(url)]), "still cached")
        #expect((try? open(inode, by: other)?.get()) != nil, "another user opens an image by its name")
    }

    @Test("the owner and root list, evict, purge and read the statistics")
    func ownerAndRoot() throws {
        _ = try cacheImage()
        #expect(listing(by: owner) == .success([NameCodec.encode(url)]))
        #expect(listing(by: .root) == .success([NameCodec.encode(url)]))
        #expect((try? open(GeneratedFile.statistics.inode, by: owner)?.get()) != nil)
        let name = Array(NameCodec.encode(url).utf8)
        #expect((try? filesystem.unlink(parent: InodeTable.imagesInode, name: name, caller: owner).get()) != nil)
        #expect(listing(by: owner) == .success([]))
        let purge = filesystem.setExtendedAttribute(
            InodeTable.controlInode, name: "user.imgfs.purge", value: Array("memory".utf8), caller: .root)
        #expect((try? purge.get()) != nil)
    }

    @Test("the modes say the same: img/ 0711, .imgfs/ 0755, its statistics 0400, images 0444")
    func modes() throws {
        let inode = try cacheImage()
        let modes = Replies<UInt16>()
        for node in [InodeTable.imagesInode, InodeTable.controlInode, GeneratedFile.statistics.inode, inode] {
            filesystem.getattr(node) { modes.record((try? $0.get())?.attributes.permissions ?? 0) }
        }
        #expect(modes.all == [0o711, 0o755, 0o400, 0o444])
    }
}

extension Result {
    fileprivate func isFailure(_ expected: FilesystemError) -> Bool {
        if case .failure(let error) = self { return (error as? FilesystemError) == expected }
        return false
    }
}
