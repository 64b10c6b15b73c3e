import CFuse
import CFuseShims
import Foundation
import ImgfsCore
import Logging

/// The low-level FUSE callbacks: each turns one kernel request into one ``ImageFilesystem`` call and its answer into
/// exactly one reply. Nothing here decides what the filesystem means.
final class FuseOperations: @unchecked Sendable {
    let filesystem: ImageFilesystem
    let logger: Logger
    /// Requests answered later, which an interrupt may answer first.
    let pending = PendingRequests()
    /// Whether the INIT answer will ask for parallel lookups (the CFuseShims hook is installed).
    var parallelLookupsRequested = false
    /// Puts an open's preload into the kernel's page cache of an inode (set once the session exists).
    var storeInKernel: (@Sendable (UInt64, (bytes: ImageSlice, generation: UInt64)) -> Void)?
    /// How opens of images are answered: through the page cache or by passthrough (set once the session exists).
    var passthrough: PassthroughOpens?
    /// Asks the kernel whether it still caches an inode's pages (set with ``passthrough``).
    var pageCacheProbe: PageCacheProbe?

    init(filesystem: ImageFilesystem, logger: Logger) {
        self.filesystem = filesystem
        self.logger = logger
    }

    /// Tracks a request about `inode` that may wait; an interrupt tells the filesystem a reader of it gave up.
    func track(_ req: fuse_req_t?, inode: UInt64) -> (ticket: UInt, interest: Interest) {
        pending.track(Request(raw: req!)) { [filesystem] in filesystem.interrupted(inode) }
    }

    /// The operations table handed to `fuse_session_new`; unset entries answer ENOSYS (flush, access: the kernel then
    /// stops asking).
    static func table() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, conn in
            let operations = Unmanaged<FuseOperations>.fromOpaque(userdata!).takeUnretainedValue()
            // The reply to INIT gets FUSE_PARALLEL_DIROPS whenever the kernel offers it (CFuseShims).
            if operations.parallelLookupsRequested && conn!.pointee.capable & UInt32(FUSE_CAP_PARALLEL_DIROPS) != 0 {
                operations.logger.notice("the kernel runs lookups in parallel: a lookup waits for the image's size")
            } else {
                operations.logger.notice("the kernel serializes lookups per directory: lookups do not wait for the network")
            }
            // The INIT answer turns passthrough on whenever the kernel offers it and it was asked for (CFuseShims).
            if operations.passthrough != nil {
                operations.logger.notice(imgfs_fuse_passthrough_offered()
                    ? "passthrough: the kernel reads images kept whole in memory by itself"
                    : "the kernel offers no passthrough (Linux 6.9+): every read goes through imgfs")
            }
        }
        ops.lookup = { req, parent, name in
            let operations = context(req)
            let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name!)).bindMemory(to: UInt8.self))
            // Only where the kernel runs lookups of one directory in parallel may a lookup wait for the network.
            let wait = imgfs_fuse_parallel_dirops_granted()
            let (ticket, interest) = operations.pending.track(Request(raw: req!)) { [filesystem = operations.filesystem] in
                filesystem.lookupInterrupted(parent: UInt64(parent), name: bytes)
            }
            operations.filesystem.lookup(parent: UInt64(parent), name: bytes, waitForSize: wait,
                                         interest: interest) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else {
                    // Interrupted: the kernel never got this entry, so it holds no reference to drop later.
                    if case .success(let entry) = result { operations.filesystem.forget(entry.attributes.inode, count: 1) }
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
            fuse_reply_none(req)
        }
        ops.forget_multi = { req, count, forgets in
            let filesystem = context(req).filesystem
            for item in UnsafeBufferPointer(start: forgets, count: count) {
                filesystem.forget(UInt64(item.ino), count: item.nlookup)
            }
            fuse_reply_none(req)
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
            let reply = OpenReply(info: info!.pointee, inode: UInt64(inode), store: operations.storeInKernel,
                                  passthrough: operations.passthrough, probe: operations.pageCacheProbe)
            let (ticket, interest) = operations.track(req, inode: UInt64(inode))
            operations.filesystem.open(UInt64(inode), forWriting: forWriting, interest: interest) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else { return }
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
            operations.filesystem.read(UInt64(inode), handle: handle, offset: Int(offset), count: size,
                                       interest: interest) { [pending = operations.pending] result in
                guard let request = pending.finish(ticket) else { return }
                let send: @Sendable () -> Void = {
                    switch result {
                    case .success(let slice): request.reply(slice: slice)
                    case .failure(let error): request.fail(error)
                    }
                }
                // Bytes that arrive later are handed over by the fetching thread: copying them into the kernel there
                // would hold up the next bytes of every transfer, so another thread sends them.
                if pthread_equal(caller, pthread_self()) != 0 { send() } else { lateReplies.async(execute: send) }
            }
            operations.pending.started(ticket)
        }
        ops.release = { req, inode, info in
            let operations = context(req)
            operations.filesystem.release(UInt64(inode), handle: info!.pointee.fh)
            if info!.pointee.fh == 0 { operations.passthrough?.end(UInt64(inode)) }  // images have handle 0
            fuse_reply_err(req, 0)
        }
        ops.unlink = { req, parent, name in
            let bytes = Array(UnsafeRawBufferPointer(start: name, count: strlen(name!)).bindMemory(to: UInt8.self))
            switch context(req).filesystem.unlink(parent: UInt64(parent), name: bytes) {
            case .success: fuse_reply_err(req, 0)
            case .failure(let error): Request(raw: req!).fail(error)
            }
        }
        ops.retrieve_reply = { req, cookie, _, _, buffers in
            context(req).pageCacheProbe?.received(cookie: cookie, bytes: buffers.map { fuse_buf_size($0) } ?? 0)
            fuse_reply_none(req)
        }
        ops.opendir = { req, inode, info in
            switch context(req).filesystem.openDirectory(UInt64(inode)) {
            case .success(let handle):
                info!.pointee.fh = handle
                fuse_reply_open(req, info)
            case .failure(let error): Request(raw: req!).fail(error)
            }
        }
        ops.readdir = { req, _, size, offset, info in
            DirectoryReply.send(Request(raw: req!), entries: context(req).filesystem.readDirectory(info!.pointee.fh, from: Int(offset)),
                                capacity: size)
        }
        ops.releasedir = { req, _, info in
            context(req).filesystem.closeDirectory(info!.pointee.fh)
            fuse_reply_err(req, 0)
        }
        ops.statfs = { req, _ in
            var info = statvfs()
            info.f_bsize = 4096
            info.f_frsize = 4096
            info.f_namemax = 255
            fuse_reply_statfs(req, &info)
        }
        ops.getxattr = { req, inode, name, size in
            let request = Request(raw: req!)
            switch context(req).filesystem.extendedAttribute(UInt64(inode), name: String(cString: name!)) {
            case .success(let value): request.reply(attribute: value, capacity: size)
            case .failure(let error): request.fail(error)
            }
        }
        ops.listxattr = { req, inode, size in
            let request = Request(raw: req!)
            switch context(req).filesystem.extendedAttributes(UInt64(inode)) {
            case .success(let attributes):
                request.reply(attribute: attributes.flatMap { Array($0.name.utf8) + [0] }, capacity: size)
            case .failure(let error): request.fail(error)
            }
        }
        ops.setxattr = { req, inode, name, value, size, _ in
            let bytes = Array(UnsafeRawBufferPointer(start: value, count: size).bindMemory(to: UInt8.self))
            switch context(req).filesystem.setExtendedAttribute(UInt64(inode), name: String(cString: name!), value: bytes) {
            case .success: fuse_reply_err(req, 0)
            case .failure(let error): Request(raw: req!).fail(error)
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
    Request(raw: req!).fail(.readOnly)
}

private func context(_ req: fuse_req_t?) -> FuseOperations {
    Unmanaged<FuseOperations>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
}

/// The answer to an open, kept until the file's size is known (the kernel's `fuse_file_info` lives only during the
/// callback).
private struct OpenReply: @unchecked Sendable {
    var info: fuse_file_info
    let inode: UInt64
    let store: (@Sendable (UInt64, (bytes: ImageSlice, generation: UInt64)) -> Void)?
    let passthrough: PassthroughOpens?
    let probe: PageCacheProbe?

    func send(_ request: Request, _ file: ImageFilesystem.OpenFile) {
        // Before the answer, so the read that follows finds the pages (keep_cache below keeps them).
        if let preload = file.preload { store?(inode, preload) }
        var info = info
        info.fh = file.handle
        if file.directIO {
            info.direct_io = 1
            fuse_reply_open(request.raw, &info)
            return
        }
        // The first open of an image that is whole in a file: passthrough only if the kernel lost its pages.
        if let probe, let passthrough, file.kernelReadable != nil, passthrough.choosesMode(inode) {
            let opened = info
            probe.firstPageCached(inode) { cached in answer(request, opened, file, pagesCached: cached) }
        } else {
            answer(request, info, file, pagesCached: false)
        }
    }

    private func answer(_ request: Request, _ info: fuse_file_info, _ file: ImageFilesystem.OpenFile, pagesCached: Bool) {
        var info = info
        if let passthrough, case .passthrough(let backingId, let readsFromDaemon) = passthrough.begin(
            inode, body: file.kernelReadable, pagesCached: pagesCached) {
            if readsFromDaemon { info.direct_io = 1 }
            // An open the kernel did not get (interrupted) gets no release.
            if imgfs_fuse_reply_open_passthrough(request.raw, &info, backingId) != 0 { passthrough.end(inode) }
            return
        }
        // Pages the kernel cached stay valid: an image's bytes do not change while its size and mtime do not, and a
        // refresh with other bytes invalidates them explicitly.
        info.keep_cache = 1
        if fuse_reply_open(request.raw, &info) != 0 { passthrough?.end(inode) }
    }
}

/// Packs directory entries into a readdir answer.
private enum DirectoryReply {
    static func send(_ request: Request, entries: [(entry: DirectoryEntry, next: Int)], capacity: Int) {
        var buffer = [CChar](repeating: 0, count: capacity)
        var used = 0
        buffer.withUnsafeMutableBufferPointer { pointer in
            for (entry, next) in entries {
                var status = Glibc.stat()
                status.st_ino = UInt(entry.inode)
                status.st_mode = entry.kind == .directory ? S_IFDIR : S_IFREG
                let needed = fuse_add_direntry(request.raw, pointer.baseAddress! + used, capacity - used, entry.name,
                                               &status, off_t(next))
                if needed > capacity - used { break }
                used += needed
            }
        }
        fuse_reply_buf(request.raw, buffer, used)
    }
}
