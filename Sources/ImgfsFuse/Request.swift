import CFuse
import CFuseShims
import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsPipeline

/// One kernel request, answered exactly once.
///
/// Guarantees: a `Request` cannot be copied and every way of answering it is `consuming`, so the compiler refuses a
/// path that answers a request twice or uses it after answering. A request dropped without an answer (a path that
/// forgot to reply) is answered with EIO by `deinit`, so no reader ever hangs on it. The reply functions copy what
/// they send, so a request may be answered from any thread after its callback returned (libfuse allows that).
struct Request: ~Copyable, Sendable {
    /// The `fuse_req_t`, as an address so that the type is `Sendable` without an unchecked promise.
    private let address: UInt

    init(_ raw: fuse_req_t) {
        address = UInt(bitPattern: raw)
    }

    private var raw: fuse_req_t { fuse_req_t(bitPattern: address)! }

    /// Who sent `raw`: the user id of the calling process and the id of its thread (`fuse_req_ctx`), read before the
    /// request is answered.
    static func caller(_ raw: fuse_req_t) -> Caller {
        let context = fuse_req_ctx(raw).pointee
        return Caller(uid: context.uid, thread: context.pid)
    }

    /// The raw request for libfuse calls that do not answer it (registering an interrupt callback, the userdata).
    func withRaw<Result>(_ body: (fuse_req_t) -> Result) -> Result {
        body(raw)
    }

    consuming func fail(_ error: FilesystemError) {
        fail(errno: error.errno)
    }

    /// Answers with `errno` (0: success without data: release, unlink, setxattr…).
    consuming func fail(errno code: Int32) {
        fuse_reply_err(raw, code)
        discard self
    }

    consuming func succeed() {
        fail(errno: 0)
    }

    /// The answer to a request that takes none (forget).
    consuming func replyNone() {
        fuse_reply_none(raw)
        discard self
    }

    consuming func reply(entry: Entry) {
        var parameters = StatConversion.entryParameters(entry)
        fuse_reply_entry(raw, &parameters)
        discard self
    }

    consuming func reply(attributes: Attributes, timeout: Double) {
        var status = StatConversion.stat(attributes)
        fuse_reply_attr(raw, &status, timeout)
        discard self
    }

    /// An extended attribute's value (or a list of names): its size when asked with capacity 0, ERANGE when it does
    /// not fit.
    consuming func reply(attribute value: [UInt8], capacity: Int) {
        if capacity == 0 {
            fuse_reply_xattr(raw, value.count)
        } else if capacity < value.count {
            fuse_reply_err(raw, ERANGE)
        } else {
            _ = value.withUnsafeBytes {
                fuse_reply_buf(raw, $0.baseAddress?.assumingMemoryBound(to: CChar.self), value.count)
            }
        }
        discard self
    }

    consuming func reply(slice: ImageSlice) {
        slice.withSegments { pieces in
            var vectors = pieces.map {
                iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
            }
            if vectors.isEmpty {
                fuse_reply_buf(raw, nil, 0)
            } else {
                fuse_reply_iov(raw, &vectors, Int32(vectors.count))
            }
        }
        // The kernel has its copy: pages mapped from a file-backed body to send it need not stay in the daemon.
        slice.releasePages()
        discard self
    }

    /// The first `count` bytes of `buffer` (a directory listing), copied by libfuse. Returns libfuse's result
    /// (non-zero when the answer did not reach the kernel).
    @discardableResult
    consuming func reply(buffer: [CChar], count: Int) -> Int32 {
        let result = fuse_reply_buf(raw, buffer, count)
        discard self
        return result
    }

    consuming func reply(statfs info: statvfs) {
        var info = info
        fuse_reply_statfs(raw, &info)
        discard self
    }

    /// An open: `fuse_reply_open`, or the passthrough form when `backingId` is given. Returns libfuse's result
    /// (non-zero when the kernel no longer waits for the answer: the open was interrupted).
    @discardableResult
    consuming func reply(open info: fuse_file_info, backingId: Int32? = nil) -> Int32 {
        var info = info
        let result =
            if let backingId {
                imgfs_fuse_reply_open_passthrough(raw, &info, backingId)
            } else {
                fuse_reply_open(raw, &info)
            }
        discard self
        return result
    }

    /// Hands the request over to a table that will give it back (``ParkedRequest``) without answering it.
    consuming func park() -> ParkedRequest {
        let parked = ParkedRequest(address: address)
        discard self
        return parked
    }

    init(unparking parked: ParkedRequest) {
        address = parked.address
    }

    deinit {
        fuse_reply_err(raw, EIO)
    }
}

/// A request kept in a table (``PendingRequests``) until exactly one of the parties that may answer it takes it back
/// with ``Request/init(unparking:)``; the table's lock makes sure only one does.
struct ParkedRequest: Sendable {
    fileprivate let address: UInt
}

/// A request kept for a reply that comes later on another thread (a closure cannot capture a non-copyable value):
/// whoever takes it out answers it.
final class PendingReply: Sendable {
    private let slot: Locked<Request?>

    init(_ request: consuming Request) {
        slot = Locked(Optional(request))
    }

    /// The request, once; nil after that.
    func take() -> Request? {
        slot.withLock { $0.take() }
    }
}

/// Attributes as `struct stat`.
enum StatConversion {
    /// A lookup's answer as libfuse takes it (LOOKUP, and the entries of READDIRPLUS).
    static func entryParameters(_ entry: Entry) -> fuse_entry_param {
        var parameters = fuse_entry_param()
        parameters.ino = fuse_ino_t(entry.attributes.inode)
        parameters.generation = 1
        parameters.attr = stat(entry.attributes)
        parameters.attr_timeout = entry.attributeTimeout
        parameters.entry_timeout = entry.entryTimeout
        return parameters
    }

    static func stat(_ attributes: Attributes) -> Glibc.stat {
        var status = Glibc.stat()
        status.st_ino = UInt(attributes.inode)
        status.st_mode = (attributes.kind == .directory ? S_IFDIR : S_IFREG) | mode_t(attributes.permissions)
        status.st_nlink = UInt(attributes.linkCount)
        status.st_size = off_t(attributes.size)
        // The I/O size programs ask for (stdio, Python, coreutils): reads of an image still arriving go to imgfs one
        // call at a time, without the kernel's read-ahead.
        status.st_blksize = 128 * 1024
        status.st_blocks = blkcnt_t((attributes.size + 511) / 512)
        status.st_uid = getuid()
        status.st_gid = getgid()
        let seconds = attributes.modified.timeIntervalSince1970
        let time = timespec(
            tv_sec: Int(saturating: seconds.rounded(.down)),
            tv_nsec: Int(saturating: (seconds - seconds.rounded(.down)) * 1e9))
        status.st_mtim = time
        status.st_ctim = time
        status.st_atim = time
        return status
    }
}

// MARK: - PendingRequests

/// Requests that wait for the network, so that an interrupt (a reader hit by Ctrl-C or killed) is answered with
/// EINTR at once instead of when the origin answers.
///
/// Guarantees: each tracked request is answered exactly once, either by the code that finishes it (which gets the
/// request back from ``finish(_:)``) or by the interrupt; the interrupt callback is registered without any lock held,
/// since libfuse may call it inside the registering call. An interrupt that comes before the operation has started
/// waiting (before ``started(_:)``) has its `onInterrupt` run again once it has, so a transfer the operation started
/// or joined meanwhile is seen abandoned.
final class PendingRequests: Sendable {
    private struct Pending {
        let request: ParkedRequest
        let interest: Interest
        let onInterrupt: @Sendable () -> Void
        var started = false
    }

    private struct Table {
        var next: UInt = 1
        var live: [UInt: Pending] = [:]
        /// What to run again once the operation of a request interrupted before it started is waiting.
        var interruptedEarly: [UInt: @Sendable () -> Void] = [:]
    }

    private let table = Locked(Table())

    /// Starts tracking `request`; returns the ticket to hand to ``finish(_:)`` and the interest to pass down, which an
    /// interrupt withdraws before calling `onInterrupt`.
    func track(
        _ request: consuming Request,
        onInterrupt: @escaping @Sendable () -> Void
    ) -> (ticket: UInt, interest: Interest) {
        let interest = Interest()
        let raw = request.withRaw { $0 }
        let parked = request.park()
        let ticket = table.withLock { table in
            let ticket = table.next
            table.next += 1
            table.live[ticket] = Pending(request: parked, interest: interest, onInterrupt: onInterrupt)
            return ticket
        }
        fuse_req_interrupt_func(raw, pendingRequestInterrupted, UnsafeMutableRawPointer(bitPattern: ticket))
        return (ticket, interest)
    }

    /// The request to answer, or nil when an interrupt has answered it already.
    func finish(_ ticket: UInt) -> Request? {
        guard let pending = table.withLock({ $0.live.removeValue(forKey: ticket) }) else { return nil }
        return Request(unparking: pending.request)
    }

    /// The operation of `ticket` has registered whatever it waits for. If an interrupt came before that, its
    /// `onInterrupt` runs again now.
    func started(_ ticket: UInt) {
        let again = table.withLock { table -> (@Sendable () -> Void)? in
            if table.live[ticket] != nil {
                table.live[ticket]?.started = true
                return nil
            }
            return table.interruptedEarly.removeValue(forKey: ticket)
        }
        again?()
    }

    /// Answers the request with EINTR unless it was answered already, then tells whoever tracked it.
    func interrupt(_ ticket: UInt) {
        let interrupted = table.withLock { table -> Pending? in
            guard let pending = table.live.removeValue(forKey: ticket) else { return nil }
            if !pending.started { table.interruptedEarly[ticket] = pending.onInterrupt }
            return pending
        }
        guard let pending = interrupted else { return }
        pending.interest.withdraw()
        Request(unparking: pending.request).fail(.interrupted)
        pending.onInterrupt()
    }
}

private func pendingRequestInterrupted(_ req: fuse_req_t?, _ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let operations = Unmanaged<FuseOperations>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue()
    operations.pending.interrupt(UInt(bitPattern: data))
}
