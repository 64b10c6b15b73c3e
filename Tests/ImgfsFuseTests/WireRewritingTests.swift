import CFuseShims
import Testing

/// The INIT and OPEN rewriting of `Sources/CFuseShims`, on byte buffers laid out as the kernel's FUSE protocol 7.40
/// defines them (the offsets below are that ABI, written out so that a header that disagreed would be caught).
@Suite("FUSE wire rewriting (CFuseShims)")
struct WireRewritingTests {
    // Opcodes and flags of <linux/fuse.h>, protocol 7.40.
    static let opcodeInit: UInt32 = 26
    static let opcodeLookup: UInt32 = 1
    static let parallelDirops: UInt32 = 1 << 18
    static let writebackCache: UInt32 = 1 << 16
    static let initExt: UInt32 = 1 << 30
    static let passthroughFlags2: UInt32 = 1 << 5
    static let directIOAllowMmapFlags2: UInt32 = 1 << 4
    static let directIO: UInt32 = 1 << 0
    static let keepCache: UInt32 = 1 << 1
    static let noFlush: UInt32 = 1 << 5
    static let openPassthrough: UInt32 = 1 << 7
    // fuse_in_header is 40 bytes; fuse_init_in and fuse_init_out are 64; fuse_open_out is 16.
    static let inHeader = 40

    /// An INIT request: header (length, opcode, unique) then fuse_init_in (major, minor, max_readahead, flags, flags2).
    static func initRequest(flags: UInt32, flags2: UInt32 = 0, unique: UInt64 = 77, bodyLength: Int = 64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: inHeader + bodyLength)
        put(UInt32(bytes.count), at: 0, in: &bytes)
        put(opcodeInit, at: 4, in: &bytes)
        put64(unique, at: 8, in: &bytes)
        put(7, at: inHeader, in: &bytes)
        put(40, at: inHeader + 4, in: &bytes)
        if bodyLength >= 16 { put(flags, at: inHeader + 12, in: &bytes) }
        if bodyLength >= 20 { put(flags2, at: inHeader + 16, in: &bytes) }
        return bytes
    }

    static func put(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    static func put64(_ value: UInt64, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    static func word(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    static func offer(_ request: [UInt8]) -> imgfs_init_offer {
        request.withUnsafeBytes { imgfs_fuse_read_init_offer($0.baseAddress, $0.count) }
    }

    static func amend(_ body: inout [UInt8], _ offer: imgfs_init_offer, wantsPassthrough: Bool) -> imgfs_init_grant {
        body.withUnsafeMutableBytes { imgfs_fuse_amend_init_reply($0.baseAddress, $0.count, offer, wantsPassthrough) }
    }

    static let offersBoth = imgfs_init_offer(
        is_init: true, unique: 77, parallel_dirops: true, passthrough: true, direct_io_mmap: false)

    // MARK: - The INIT request

    @Test("an INIT request offering parallel lookups and passthrough (with FUSE_INIT_EXT) is read as such")
    func readsAFullOffer() {
        let offer = Self.offer(
            Self.initRequest(
                flags: Self.parallelDirops | Self.initExt,
                flags2: Self.passthroughFlags2, unique: 12_345))
        #expect(offer.is_init && offer.parallel_dirops && offer.passthrough && !offer.direct_io_mmap)
        #expect(offer.unique == 12_345)
        let mapping = Self.offer(
            Self.initRequest(flags: Self.initExt, flags2: Self.directIOAllowMmapFlags2 | Self.passthroughFlags2))
        #expect(mapping.direct_io_mmap && mapping.passthrough)
        let withoutExt = Self.offer(Self.initRequest(flags: 0, flags2: Self.directIOAllowMmapFlags2))
        #expect(withoutExt.is_init && !withoutExt.direct_io_mmap)
    }

    @Test(
        "flags2 counts only when the request says FUSE_INIT_EXT; a request that ends after flags offers no passthrough")
    func flags2NeedsTheExtension() {
        let withoutExt = Self.offer(Self.initRequest(flags: Self.parallelDirops, flags2: Self.passthroughFlags2))
        #expect(withoutExt.is_init && withoutExt.parallel_dirops && !withoutExt.passthrough)
        let older = Self.offer(Self.initRequest(flags: Self.parallelDirops | Self.initExt, bodyLength: 16))
        #expect(older.is_init && older.parallel_dirops && !older.passthrough)
        let nothing = Self.offer(Self.initRequest(flags: 0))
        #expect(nothing.is_init && !nothing.parallel_dirops && !nothing.passthrough)
    }

    @Test("other requests and buffers too short to hold INIT's flags are not INIT")
    func otherRequestsAreIgnored() {
        var lookup = Self.initRequest(flags: Self.parallelDirops)
        Self.put(Self.opcodeLookup, at: 4, in: &lookup)
        #expect(!Self.offer(lookup).is_init)
        #expect(!Self.offer(Array(Self.initRequest(flags: Self.parallelDirops).prefix(Self.inHeader + 12))).is_init)
        #expect(!Self.offer([]).is_init)
    }

    // MARK: - The INIT reply

    @Test("the reply gets FUSE_PARALLEL_DIROPS, FUSE_INIT_EXT, the passthrough bit and stack depth 1, nothing else")
    func amendsAFullReply() {
        var body = [UInt8](repeating: 0, count: 64)
        Self.put(0x0000_1001, at: 12, in: &body)  // some flags libfuse set
        body[20] = 0xAB  // max_write's low byte: must stay
        let before = body
        let grant = Self.amend(&body, Self.offersBoth, wantsPassthrough: true)
        #expect(grant.parallel_dirops && grant.passthrough)
        #expect(Self.word(body, at: 12) == 0x0000_1001 | Self.parallelDirops | Self.initExt)
        #expect(Self.word(body, at: 32) == Self.passthroughFlags2)
        #expect(Self.word(body, at: 36) == 1)
        let changed = (0..<64).filter { body[$0] != before[$0] }
        #expect(changed.allSatisfy { (12..<16).contains($0) || (32..<40).contains($0) })
    }

    @Test("FUSE_DIRECT_IO_ALLOW_MMAP (with FUSE_INIT_EXT) when the kernel offered it, whether or not passthrough is")
    func allowsMappingDirectFiles() {
        for wants in [true, false] {
            var body = [UInt8](repeating: 0, count: 64)
            var offer = Self.offersBoth
            offer.direct_io_mmap = true
            let grant = Self.amend(&body, offer, wantsPassthrough: wants)
            #expect(grant.direct_io_mmap && grant.passthrough == wants)
            #expect(Self.word(body, at: 12) == Self.parallelDirops | Self.initExt)
            #expect(Self.word(body, at: 32) == Self.directIOAllowMmapFlags2 | (wants ? Self.passthroughFlags2 : 0))
        }
        var notOffered = [UInt8](repeating: 0, count: 64)
        let grant = Self.amend(&notOffered, Self.offersBoth, wantsPassthrough: false)
        #expect(!grant.direct_io_mmap && Self.word(notOffered, at: 32) == 0)
        var older = [UInt8](repeating: 0, count: 24)
        var offer = Self.offersBoth
        offer.direct_io_mmap = true
        #expect(!Self.amend(&older, offer, wantsPassthrough: false).direct_io_mmap)
    }

    @Test("no passthrough when not wanted, not offered, or with a writeback cache; parallel lookups still")
    func passthroughOnlyWhenAllAgree() {
        let cases: [(offer: imgfs_init_offer, wants: Bool, flags: UInt32)] = [
            (Self.offersBoth, false, 0),
            (
                imgfs_init_offer(
                    is_init: true, unique: 1, parallel_dirops: true, passthrough: false, direct_io_mmap: false), true, 0
            ),
            (Self.offersBoth, true, Self.writebackCache)
        ]
        for (offer, wants, flags) in cases {
            var body = [UInt8](repeating: 0, count: 64)
            Self.put(flags, at: 12, in: &body)
            let grant = Self.amend(&body, offer, wantsPassthrough: wants)
            #expect(grant.parallel_dirops && !grant.passthrough)
            #expect(Self.word(body, at: 12) == flags | Self.parallelDirops)
            #expect(Self.word(body, at: 32) == 0 && Self.word(body, at: 36) == 0)
        }
    }

    @Test(
        "a reply shorter than protocol 7.40's (older libfuse): parallel lookups if flags fit, never passthrough"
    )
    func shortRepliesAreLeftAlone() {
        var older = [UInt8](repeating: 0, count: 24)
        let grant = Self.amend(&older, Self.offersBoth, wantsPassthrough: true)
        #expect(grant.parallel_dirops && !grant.passthrough)
        #expect(Self.word(older, at: 12) == Self.parallelDirops)
        var tiny = [UInt8](repeating: 0xEE, count: 12)
        let none = Self.amend(&tiny, Self.offersBoth, wantsPassthrough: true)
        #expect(!none.parallel_dirops && !none.passthrough)
        #expect(tiny.allSatisfy { $0 == 0xEE })
        var notOffered = [UInt8](repeating: 0, count: 64)
        let noOffer = imgfs_init_offer(
            is_init: true, unique: 1, parallel_dirops: false, passthrough: false, direct_io_mmap: false)
        let nothing = Self.amend(&notOffered, noOffer, wantsPassthrough: true)
        #expect(!nothing.parallel_dirops && !nothing.passthrough && notOffered.allSatisfy { $0 == 0 })
    }

    // MARK: - The OPEN reply

    @Test("a passthrough open keeps only direct_io and noflush, sets the passthrough flag and carries the backing id")
    func amendsAnOpenReply() {
        var body = [UInt8](repeating: 0, count: 16)
        Self.put64(0xDEAD_BEEF, at: 0, in: &body)  // fh
        Self.put(Self.directIO | Self.keepCache | Self.noFlush, at: 8, in: &body)
        let amended = body.withUnsafeMutableBytes { imgfs_fuse_amend_open_reply($0.baseAddress, $0.count, 42) }
        #expect(amended)
        #expect(Self.word(body, at: 8) == Self.directIO | Self.noFlush | Self.openPassthrough)
        #expect(Self.word(body, at: 12) == 42)
        #expect(Self.word(body, at: 0) == 0xDEAD_BEEF)
    }

    @Test("an OPEN reply of another size, or no backing id, is left untouched")
    func otherOpenRepliesAreLeftAlone() {
        for (length, id) in [(24, Int32(3)), (8, Int32(3)), (16, Int32(0))] {
            var body = [UInt8](repeating: 0x11, count: length)
            let amended = body.withUnsafeMutableBytes { imgfs_fuse_amend_open_reply($0.baseAddress, $0.count, id) }
            #expect(!amended)
            #expect(body.allSatisfy { $0 == 0x11 })
        }
    }
}
