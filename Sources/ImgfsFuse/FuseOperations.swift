import CFuse
import CFuseShims
import Foundation
import Glibc
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline
import Logging
import Synchronization

/// The low-level FUSE callbacks: each turns one kernel request into one ``ImageFilesystem`` call and its answer into
/// exactly one reply. Nothing here decides what the filesystem means.
/// Unchecked `Sendable`: its few `var`s are set once while the session is built, before the loop starts, and only
/// read afterwards.
final class FuseOperations: @unchecked Sendable {
    let filesystem: ImageFilesystem
    let logger: Logger
    /// Requests answered later, which an interrupt may answer first.
    let pending = PendingRequests()
    /// Whether the INIT answer will ask for parallel lookups (the CFuseShims hook is installed).
    var parallelLookupsRequested = false
    /// The read-ahead the INIT answer asks for, in bytes (0: libfuse's, the kernel's offer).
    var maxReadAhead: UInt32 = 0
    /// Whether the kernel offered parallel lookups in its INIT request, and whether the first lookup has checked that
    /// the answer really asked for them (``reportUnexpectedGrant()``).
    let parallelLookupsOffered = Atomic<Bool>(false)
    private let grantChecked = Atomic<Bool>(false)
    /// Puts an open's preload into the kernel's page cache of an inode (set once the session exists).
    var storeInKernel: (@Sendable (UInt64, (bytes: ImageSlice, generation: UInt64)) -> Void)?
    /// How opens are answered: direct IO, through the page cache or by passthrough (its files registered once the
    /// session exists).
    var openDecision = OpenDecision()
    /// Whether the mount asked the kernel for passthrough.
    var passthroughRequested = false
    /// Asks the kernel whether it still caches an inode's pages (set with the passthrough backing of ``openDecision``).
    var pageCacheProbe: PageCacheProbe?
    /// Whether the mount lets the reads of a large image that is still arriving bypass the page cache
    /// (``ImageFilesystem/OpenFile/arrivingAlone``).
    var directReadsWhileArriving = false

    /// Whether an open of an image still arriving bypasses the page cache now: asked for, the opens after it can be
    /// served by passthrough from the whole image (so no read needs the pages it did not leave), and the kernel lets
    /// direct_io files be mapped shared (Linux 6.6+), so programs that map images still can.
    var bypassesPageCacheWhileArriving: Bool {
        directReadsWhileArriving && openDecision.passthroughIsUsable && imgfs_fuse_direct_io_mmap_granted()
    }

    init(filesystem: ImageFilesystem, logger: Logger) {
        self.filesystem = filesystem
        self.logger = logger
    }

    /// Tracks a request about `inode` that may wait; an interrupt tells the filesystem a reader of it gave up.
    func track(_ req: fuse_req_t?, inode: UInt64) -> (ticket: UInt, interest: Interest) {
        pending.track(Request(req!)) { [filesystem] in filesystem.interrupted(inode) }
    }

    /// At the first lookup, when the INIT answer has been sent: if the kernel offered parallel lookups but the answer
    /// could not ask for them (a libfuse whose INIT reply is laid out otherwise), the log says the feature is off.
    private func reportUnexpectedGrant(granted: Bool) {
        guard !grantChecked.exchange(true, ordering: .relaxed), parallelLookupsOffered.load(ordering: .relaxed),
            !granted
        else { return }
        let message =
            "the INIT answer could not ask for parallel lookups (unexpected reply layout): "
            + "lookups do not wait for the network"
        logger.warning("\(message)")
    }

    /// The operations table handed to `fuse_session_new`; unset entries answer ENOSYS (flush, access: the kernel then
    /// stops asking).
    static func table() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, conn in
            let operations = Unmanaged<FuseOperations>.fromOpaque(userdata!).takeUnretainedValue()
            // The reply to INIT gets FUSE_PARALLEL_DIROPS whenever the kernel offers it (CFuseShims).
            if operations.parallelLookupsRequested && conn!.pointee.capable & UInt32(FUSE_CAP_PARALLEL_DIROPS) != 0 {
                operations.parallelLookupsOffered.store(true, ordering: .relaxed)
                operations.logger.notice("the kernel runs lookups in parallel: a lookup waits for the image's size")
            } else {
                operations.logger.notice(
                    "the kernel serializes lookups per directory: lookups do not wait for the network")
            }
            // Every read of a listing is a READDIRPLUS, not only its first (the AUTO mode): the entries imgfs knows
            // without the network come with their attributes, so `ls -l` or scandir + stat of a probed list of any
            // size makes no lookup for them.
            if conn!.pointee.capable & UInt32(FUSE_CAP_READDIRPLUS) != 0 {
                conn!.pointee.want |= UInt32(FUSE_CAP_READDIRPLUS)
                conn!.pointee.want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
            }
            // The kernel keeps the smaller of this and the device's read-ahead, which the mount has just set.
            if operations.maxReadAhead > 0 { conn!.pointee.max_readahead = operations.maxReadAhead }
            // The INIT answer turns passthrough on whenever the kernel offers it and it was asked for (CFuseShims).
            if operations.passthroughRequested {
                operations.logger.notice(
                    imgfs_fuse_passthrough_offered()
                        ? "passthrough: the kernel reads images kept whole in memory by itself"
                        : "the kernel offers no passthrough (Linux 6.9+): every read goes through imgfs")
            }
        }
        ops.lookup = { req, parent, name in
            let operations = context(req)
            let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name!)).bindMemory(to: UInt8.self))
            // Only where the kernel runs lookups of one directory in parallel may a lookup wait for the network.
            let wait = imgfs_fuse_parallel_dirops_granted()
            operations.reportUnexpectedGrant(granted: wait)
            let (ticket, interest) = operations.pending.track(Request(req!)) { [filesystem = operations.filesystem] in
                filesystem.lookupInterrupted(parent: UInt64(parent), name: bytes)
            }
            operations.filesystem.lookup(
                parent: UInt64(parent), name: bytes, waitForSize: wait, caller: Request.caller(req!),
                interest: interest
            ) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else {
                    // Interrupted: the kernel never got this entry, so it holds no reference to drop later.
                    if case .success(let entry) = result {
                        operations.filesystem.forget(entry.attributes.inode, count: 1)
                    }
                    return
                }
                switch result {
                case .success(let entry): request.reply(entry: entry)
                case .failure(let error): request.fail(error)
                }
            }
            operations.pending.started(ticket)
        }
        ops.forget = { req, inode, count in
            context(req).filesystem.forget(UInt64(inode), count: count)
            Request(req!).replyNone()
        }
        ops.forget_multi = { req, count, forgets in
            let filesystem = context(req).filesystem
            for item in UnsafeBufferPointer(start: forgets, count: count) {
                filesystem.forget(UInt64(item.ino), count: item.nlookup)
            }
            Request(req!).replyNone()
        }
        ops.getattr = { req, inode, _ in
            let operations = context(req)
            let (ticket, interest) = operations.track(req, inode: UInt64(inode))
            operations.filesystem.getattr(UInt64(inode), interest: interest) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else { return }
                switch result {
                case .success(let entry): request.reply(attributes: entry.attributes, timeout: entry.attributeTimeout)
                case .failure(let error): request.fail(error)
                }
            }
            operations.pending.started(ticket)
        }
        ops.open = { req, inode, info in
            let operations = context(req)
            let forWriting = (info!.pointee.flags & O_ACCMODE) != O_RDONLY
            let reply = OpenReply(
                info: info!.pointee, inode: UInt64(inode), filesystem: operations.filesystem,
                store: operations.storeInKernel,
                decision: operations.openDecision, probe: operations.pageCacheProbe,
                bypassWhileArriving: operations.bypassesPageCacheWhileArriving)
            let caller = Request.caller(req!)
            let (ticket, interest) = operations.track(req, inode: UInt64(inode))
            operations.filesystem.open(UInt64(inode), forWriting: forWriting, caller: caller, interest: interest) {
                [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else {
                    // Interrupted: the kernel never got this handle, so it sends no release for it.
                    if case .success(let file) = result {
                        operations.filesystem.release(UInt64(inode), handle: file.handle)
                    }
                    return
                }
                switch result {
                case .success(let file): reply.send(request, file)
                case .failure(let error): request.fail(error)
                }
            }
            operations.pending.started(ticket)
        }
        ops.read = { req, inode, size, offset, info in
            let operations = context(req)
            let handle = info!.pointee.fh
            let (ticket, interest) = operations.track(req, inode: UInt64(inode))
            let caller = pthread_self()
            operations.filesystem.read(
                UInt64(inode), handle: handle, offset: Int(offset), count: size,
                interest: interest
            ) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else { return }
                // Bytes that arrive later are handed over by the fetching thread: copying them into the kernel there
                // would hold up the next bytes of every transfer, so another thread sends them.
                if pthread_equal(caller, pthread_self()) != 0 {
                    answerRead(request, result)
                } else {
                    let later = PendingReply(request)
                    lateReplies.async { if let request = later.take() { answerRead(request, result) } }
                }
            }
            operations.pending.started(ticket)
        }
        ops.release = { req, inode, info in
            let operations = context(req)
            // Images and thumbnails were counted by passthrough's rules at their open; generated files were not.
            if operations.filesystem.release(UInt64(inode), handle: info!.pointee.fh) {
                operations.openDecision.end(UInt64(inode))
            }
            Request(req!).succeed()
        }
        ops.unlink = { req, parent, name in
            let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name!)).bindMemory(to: UInt8.self))
            let request = Request(req!)
            switch context(req).filesystem.unlink(parent: UInt64(parent), name: bytes, caller: Request.caller(req!)) {
            case .success: request.succeed()
            case .failure(let error): request.fail(error)
            }
        }
        ops.retrieve_reply = { req, cookie, _, _, buffers in
            context(req).pageCacheProbe?.received(cookie: cookie, bytes: buffers.map { fuse_buf_size($0) } ?? 0)
            Request(req!).replyNone()
        }
        ops.opendir = { req, inode, info in
            let request = Request(req!)
            switch context(req).filesystem.openDirectory(UInt64(inode), caller: Request.caller(req!)) {
            case .success(let handle):
                info!.pointee.fh = handle
                request.reply(open: info!.pointee)
            case .failure(let error): request.fail(error)
            }
        }
        ops.readdir = { req, _, size, offset, info in
            // As many entries as the reply holds (the kernel asks for up to 128 KiB).
            let entries = context(req).filesystem.readDirectory(info!.pointee.fh, from: Int(offset), replySize: size)
            DirectoryReply.send(Request(req!), entries: entries, capacity: size)
        }
        ops.readdirplus = { req, _, size, offset, info in
            DirectoryReply.sendPlus(
                Request(req!), filesystem: context(req).filesystem, handle: info!.pointee.fh, from: Int(offset),
                capacity: size)
        }
        ops.releasedir = { req, _, info in
            context(req).filesystem.closeDirectory(info!.pointee.fh)
            Request(req!).succeed()
        }
        ops.statfs = { req, _ in
            var info = statvfs()
            info.f_bsize = 4096
            info.f_frsize = 4096
            info.f_namemax = 255
            Request(req!).reply(statfs: info)
        }
        ops.getxattr = { req, inode, name, size in
            let request = Request(req!)
            switch context(req).filesystem.extendedAttribute(UInt64(inode), name: String(cString: name!)) {
            case .success(let value): request.reply(attribute: value, capacity: size)
            case .failure(let error): request.fail(error)
            }
        }
        ops.listxattr = { req, inode, size in
            let request = Request(req!)
            switch context(req).filesystem.extendedAttributes(UInt64(inode)) {
            case .success(let attributes):
                request.reply(attribute: attributes.flatMap { Array($0.name.utf8) + [0] }, capacity: size)
            case .failure(let error): request.fail(error)
            }
        }
        ops.setxattr = { req, inode, name, value, size, _ in
            let bytes = Array(UnsafeRawBufferPointer(start: value, count: size).bindMemory(to: UInt8.self))
            let request = Request(req!)
            switch context(req).filesystem.setExtendedAttribute(
                UInt64(inode), name: String(cString: name!), value: bytes, caller: Request.caller(req!))
            {
            case .success: request.succeed()
            case .failure(let error): request.fail(error)
            }
        }
        installReadOnlyRefusals(&ops)
        return ops
    }

    /// Every operation that would change something answers EROFS (unlink, which evicts, is the exception).
    private static func installReadOnlyRefusals(_ ops: inout fuse_lowlevel_ops) {
        ops.setattr = { req, _, _, _, _ in refuse(req) }
        ops.mknod = { req, _, _, _, _ in refuse(req) }
        ops.mkdir = { req, _, _, _ in refuse(req) }
        ops.rmdir = { req, _, _ in refuse(req) }
        ops.symlink = { req, _, _, _ in refuse(req) }
        ops.rename = { req, _, _, _, _, _ in refuse(req) }
        ops.link = { req, _, _, _ in refuse(req) }
        ops.write = { req, _, _, _, _, _ in refuse(req) }
        ops.create = { req, _, _, _, _ in refuse(req) }
        ops.removexattr = { req, _, _ in refuse(req) }
    }
}

// C function pointers cannot capture anything, so these helpers are free functions.

/// Where read replies that were waited for are sent from (concurrent: each is one copy into the kernel).
private let lateReplies = DispatchQueue(label: "imgfs.read-replies", attributes: .concurrent)

private func refuse(_ req: fuse_req_t?) {
    Request(req!).fail(.readOnly)
}

/// Answers a read with its bytes or its error.
private func answerRead(_ request: consuming Request, _ result: Result<ImageSlice, FilesystemError>) {
    switch result {
    case .success(let slice): request.reply(slice: slice)
    case .failure(let error): request.fail(error)
    }
}

private func context(_ req: fuse_req_t?) -> FuseOperations {
    Unmanaged<FuseOperations>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
}

/// The answer to an open, kept until the file's size is known (the kernel's `fuse_file_info` lives only during the
/// callback): carries out what ``OpenDecision`` says. It holds a copy of the kernel's `fuse_file_info`, a plain C
/// struct of integers, which is `Sendable` as imported.
private struct OpenReply: Sendable {
    var info: fuse_file_info
    let inode: UInt64
    let filesystem: ImageFilesystem
    let store: (@Sendable (UInt64, (bytes: ImageSlice, generation: UInt64)) -> Void)?
    let decision: OpenDecision
    let probe: PageCacheProbe?
    /// ``FuseOperations/bypassesPageCacheWhileArriving`` when the open came.
    let bypassWhileArriving: Bool

    func send(_ request: consuming Request, _ file: ImageFilesystem.OpenFile) {
        // Before the answer, so the read that follows finds the pages (keep_cache below keeps them).
        if let preload = file.preload { store?(inode, preload) }
        var info = info
        info.fh = file.handle
        // The first open of an image that is whole in a file: passthrough only if the kernel lost its pages.
        if let probe, decision.asksWhetherPagesAreCached(inode, file: file) {
            let opened = info
            let later = PendingReply(request)
            probe.firstPageCached(inode) { cached in
                if let request = later.take() { answer(request, opened, file, pagesCached: cached) }
            }
        } else {
            answer(request, info, file, pagesCached: false)
        }
    }

    private func answer(
        _ request: consuming Request, _ info: fuse_file_info, _ file: ImageFilesystem.OpenFile, pagesCached: Bool
    ) {
        var info = info
        var backingId: Int32?
        switch decision.begin(inode, file: file, pagesCached: pagesCached, bypassWhileArriving: bypassWhileArriving) {
        case .directIO:
            info.direct_io = 1
        case .pageCache:
            info.keep_cache = 1
        case .passthrough(let id, let readsFromDaemon):
            backingId = id
            if readsFromDaemon { info.direct_io = 1 }
        }
        // An open the kernel did not get (interrupted) gets no release: it ends here.
        if request.reply(open: info, backingId: backingId) != 0 {
            if !file.directIO { decision.end(inode) }
            filesystem.release(inode, handle: file.handle)
        }
    }
}

/// Packs directory entries into a readdir answer.
private enum DirectoryReply {
    static func send(_ request: consuming Request, entries: [(entry: DirectoryEntry, next: Int)], capacity: Int) {
        var buffer = [CChar](repeating: 0, count: capacity)
        var used = 0
        buffer.withUnsafeMutableBufferPointer { pointer in
            for (entry, next) in entries {
                var status = Glibc.stat()
                status.st_ino = UInt(entry.inode)
                status.st_mode = entry.kind == .directory ? S_IFDIR : S_IFREG
                let needed = request.withRaw {
                    fuse_add_direntry(
                        $0, pointer.baseAddress! + used, capacity - used, entry.name, &status, off_t(next))
                }
                if needed > capacity - used { break }
                used += needed
            }
        }
        request.reply(buffer: buffer, count: used)
    }

    /// The smallest entry of a READDIRPLUS answer: `struct fuse_direntplus` (a `fuse_entry_out`, then a `fuse_dirent`
    /// whose name starts at byte 24) with a one-byte name, padded to 8 bytes.
    static let smallestPlusEntry = 128 + 24 + 8

    /// Packs the entries of a READDIRPLUS answer: an entry the filesystem answers as a lookup would carries that answer
    /// (and counts as a lookup, which the kernel forgets later); the others carry node id 0, which the kernel takes as
    /// a plain directory entry (it looks the name up when it is used). Only the entries that fit are counted, and none
    /// when the answer does not reach the kernel.
    static func sendPlus(
        _ request: consuming Request, filesystem: ImageFilesystem, handle: UInt64, from offset: Int, capacity: Int
    ) {
        var buffer = [CChar](repeating: 0, count: capacity)
        var used = 0
        var counted: [UInt64] = []
        let raw = request.withRaw { $0 }
        buffer.withUnsafeMutableBufferPointer { pointer in
            filesystem.readDirectoryPlus(handle, from: offset, limit: capacity / smallestPlusEntry + 1) { offer in
                var parameters = fuse_entry_param()
                if let lookup = offer.lookup {
                    parameters = StatConversion.entryParameters(lookup)
                } else {
                    // ino 0: no entry, only the name, d_ino and d_type.
                    parameters.attr.st_ino = UInt(offer.entry.inode)
                    parameters.attr.st_mode = offer.entry.kind == .directory ? S_IFDIR : S_IFREG
                }
                let needed = fuse_add_direntry_plus(
                    raw, pointer.baseAddress! + used, capacity - used, offer.entry.name, &parameters, off_t(offer.next))
                guard needed <= capacity - used else { return false }
                used += needed
                if let lookup = offer.lookup { counted.append(lookup.attributes.inode) }
                return true
            }
        }
        if request.reply(buffer: buffer, count: used) != 0 {
            for inode in counted { filesystem.forget(inode, count: 1) }
        }
    }
}

// MARK: - SessionNotifier

/// Sends notices to the kernel (invalidations, and bytes to put in its page cache) from any thread, until the session
/// closes.
///
/// Guarantees: the session is never used after ``close()`` returns. Notices do not wait for each other: every open
/// of a small image stores its bytes here, from up to all the FUSE threads at once, and a store is a copy into the
/// page cache that took its turn under a plain lock before (libfuse sends each notice in one write of its own, so
/// they may overlap).
final class SessionNotifier: @unchecked Sendable {
    private let session: OpaquePointer
    /// Shared by the notices, exclusive for ``close()``.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Set once, under the exclusive lock.
    private var closed = false

    init(session: OpaquePointer) {
        self.session = session
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Drops the kernel's cached pages and attributes of `inode`.
    func invalidate(_ inode: UInt64) {
        withOpenSession { session in
            _ = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(inode), 0, 0)
        }
    }

    /// Drops the kernel's name `name` in directory `parent` (and, for a directory, the names it caches below it).
    func invalidateEntry(_ parent: UInt64, name: String) {
        withOpenSession { session in
            _ = fuse_lowlevel_notify_inval_entry(session, fuse_ino_t(parent), name, name.utf8.count)
        }
    }

    /// Puts `slice` (from offset 0) into the kernel's page cache of `inode`, marked up to date.
    func store(_ inode: UInt64, _ slice: ImageSlice) {
        withOpenSession { session in
            slice.withSegments { pieces in
                if pieces.count == 1 {
                    Self.send(session, inode, pieces[0])
                } else {
                    let joined = pieces.flatMap { Array($0) }
                    joined.withUnsafeBytes { Self.send(session, inode, $0) }
                }
            }
            slice.releasePages()
        }
    }

    /// Stops the notices: waits for those being sent; later ones are dropped.
    func close() {
        pthread_rwlock_wrlock(lock)
        closed = true
        pthread_rwlock_unlock(lock)
    }

    private func withOpenSession(_ body: (OpaquePointer) -> Void) {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        if !closed { body(session) }
    }

    private static func send(_ session: OpaquePointer, _ inode: UInt64, _ bytes: UnsafeRawBufferPointer) {
        var vector = fuse_bufvec()
        vector.count = 1
        vector.idx = 0
        vector.off = 0
        vector.buf.size = bytes.count
        vector.buf.flags = fuse_buf_flags(rawValue: 0)
        vector.buf.mem = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        vector.buf.fd = -1
        vector.buf.pos = 0
        _ = fuse_lowlevel_notify_store(session, fuse_ino_t(inode), 0, &vector, fuse_buf_copy_flags(rawValue: 0))
    }
}
