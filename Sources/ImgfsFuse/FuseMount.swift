import CFuse
import CFuseShims
import Foundation
import ImgfsFilesystem
import ImgfsModel
import ImgfsSystem
import Logging
import Synchronization

/// A mounted ImageFilesystem: creates the FUSE session, mounts it, serves it on a pool of threads until it is
/// unmounted or stopped (``stopper``), and then unmounts.
///
/// Guarantees: after ``serve(beforeUnmount:)`` returns, the mount point is unmounted and the session destroyed;
/// libfuse installs no signal handlers (the daemon's signals go to its signal thread, which calls ``stopper``);
/// `beforeUnmount` runs after the loop ends and before unmounting, while replies can still be sent.
public final class FuseMount {
    /// Why a mount could not be made.
    public struct MountError: Error, CustomStringConvertible {
        /// One line that says why.
        public let description: String
    }

    private let operations: FuseOperations
    private let session: OpaquePointer
    private let mountPoint: String
    private let logger: Logger
    private let maxThreads: UInt32
    private var notifier: SessionNotifier?
    /// Ends ``serve(beforeUnmount:)``'s loop from any thread.
    public let stopper: FuseLoopStopper

    /// Creates the session and mounts it at `mountPoint` with the FUSE `options` (`-o` list).
    /// With `passthrough` requested, opens of images whose whole body is in a file (``KernelReadableBody``) are
    /// answered so that the kernel reads that file by itself. A `readAheadKiB` above 0 sets the kernel's read-ahead
    /// for the mount's files (``KernelReadAhead``); without the privilege to, the kernel's own stays and a notice says
    /// so. With `directReadsWhileArriving`, a large image opened while it still arrives (and not open elsewhere) is
    /// read past the page cache, where passthrough serves the opens after it and the kernel lets such files be
    /// mapped shared.
    public init(
        filesystem: ImageFilesystem, mountPoint: String, options: [String], maxThreads: Int = 16,
        passthrough: PassthroughAvailability = PassthroughAvailability(requested: false), readAheadKiB: Int = 0,
        directReadsWhileArriving: Bool = false, logger: Logger
    ) throws {
        self.operations = FuseOperations(filesystem: filesystem, logger: logger)
        operations.directReadsWhileArriving = directReadsWhileArriving
        self.mountPoint = mountPoint
        self.logger = logger
        self.maxThreads = UInt32(maxThreads)
        let arguments = ["imgfs", "-o", (["fsname=imgfs", "subtype=imgfs"] + options).joined(separator: ",")]
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() { argv[index] = strdup(argument) }
        argv[arguments.count] = nil
        defer {
            for index in 0..<arguments.count { free(argv[index]) }
            argv.deallocate()
        }
        var args = fuse_args(argc: Int32(arguments.count), argv: argv, allocated: 0)
        var table = FuseOperations.table()
        let context = Unmanaged.passUnretained(operations).toOpaque()
        guard let session = fuse_session_new(&args, &table, MemoryLayout<fuse_lowlevel_ops>.size, context) else {
            fuse_opt_free_args(&args)
            throw MountError(description: "invalid FUSE options: \(options.joined(separator: ","))")
        }
        fuse_opt_free_args(&args)
        self.session = session
        stopper = FuseLoopStopper(session: FuseSessionPointer(raw: session))
        guard fuse_session_mount(session, mountPoint) == 0 else {
            fuse_session_destroy(session)
            throw MountError(description: "cannot mount on \(mountPoint) (see the fuse message above)")
        }
        operations.parallelLookupsRequested = imgfs_fuse_install_init_hooks(session, passthrough.requested)
        if readAheadKiB > 0 {
            // Before INIT is answered: the kernel keeps the smaller of the device's value and the INIT answer's.
            if let failure = KernelReadAhead.set(kibibytes: readAheadKiB, mountPoint: mountPoint) {
                logger.notice("the kernel's read-ahead stays at its default (\(failure))")
            } else {
                operations.maxReadAhead = UInt32(readAheadKiB) * 1024
            }
        }
        if operations.parallelLookupsRequested && passthrough.requested {
            operations.openDecision = OpenDecision(
                backing: PassthroughBacking(
                    session: FuseSessionPointer(raw: session), availability: passthrough, logger: logger))
            operations.passthroughRequested = true
            operations.pageCacheProbe = PageCacheProbe(session: FuseSessionPointer(raw: session))
        }
        if !operations.parallelLookupsRequested {
            logger.warning("cannot ask the kernel for parallel lookups; lookups will not wait for the network")
        }
        let notifier = SessionNotifier(session: session)
        filesystem.onInvalidate { inode in notifier.invalidate(inode) }
        filesystem.onInvalidateEntry { parent, name in notifier.invalidateEntry(parent, name: name) }
        operations.storeInKernel = { inode, preload in
            notifier.store(inode, preload.bytes)
            // A new body that arrived while storing: drop what was stored (its invalidation may have come first).
            if !filesystem.preloadIsCurrent(inode, generation: preload.generation) { notifier.invalidate(inode) }
        }
        self.notifier = notifier
    }

    /// Serves requests until the filesystem is unmounted or ``stopper`` stops it, then unmounts.
    public func serve(beforeUnmount: () -> Void) {
        let config = fuse_loop_cfg_create()
        fuse_loop_cfg_set_max_threads(config, maxThreads)
        // 4 kept idle: bursts of 16 readers start and end threads (about 740 per 2,000 icons after a remount), but
        // keeping all 16 made reads of cached small files 40 % slower in the benchmark (warm-small).
        fuse_loop_cfg_set_idle_threads(config, 4)
        stopper.loopStarting()
        let result = fuse_session_loop_mt(session, config)
        stopper.loopEnded()
        fuse_loop_cfg_destroy(config)
        logger.info("leaving the request loop (\(result)); unmounting \(mountPoint)")
        beforeUnmount()
        notifier?.close()
        fuse_session_unmount(session)
        fuse_session_destroy(session)
    }
}

// MARK: - PassthroughAvailability

/// Whether a mount lets the kernel read large images by itself (FUSE passthrough, Linux 6.9+): it was asked for, the
/// kernel accepted it when the mount started, and the kernel has not refused a registration for lack of privilege.
/// Shared by the mount, which answers opens, and by whoever decides where image bodies are kept (only bodies the
/// kernel can be handed need to live in files).
///
/// Guarantees: false before the mount's INIT has been answered and forever after the first refusal.
public final class PassthroughAvailability: Sendable {
    /// Whether the mount asks the kernel for passthrough.
    public let requested: Bool
    private let refused = Atomic<Bool>(false)

    /// Availability for a mount that asks for passthrough when `requested`; false until the kernel accepts it.
    public init(requested: Bool) {
        self.requested = requested
    }

    /// Whether opens may use passthrough now.
    public var isUsable: Bool {
        requested && imgfs_fuse_passthrough_granted() && !refused.load(ordering: .relaxed)
    }

    /// Records that the kernel refused a registration for lack of privilege; true the first time.
    func markRefused() -> Bool {
        !refused.exchange(true, ordering: .relaxed)
    }
}

// MARK: - PassthroughBacking

/// Registers image files with the kernel for FUSE passthrough (``BackingFileRegistering``): libfuse's backing-file
/// calls for ``OpenDecision``, which decides which opens use them.
///
/// Guarantees: once the kernel refuses a registration for lack of privilege (CAP_SYS_ADMIN), ``isUsable`` is false
/// and no other is attempted; every refusal and failed unregistration is logged.
final class PassthroughBacking: BackingFileRegistering {
    private let session: FuseSessionPointer
    private let availability: PassthroughAvailability
    private let logger: Logger

    init(session: FuseSessionPointer, availability: PassthroughAvailability, logger: Logger) {
        self.session = session
        self.availability = availability
        self.logger = logger
    }

    /// Whether opens may use passthrough now (``PassthroughAvailability/isUsable``).
    var isUsable: Bool { availability.isUsable }

    func register(_ descriptor: Int32) -> Int32? {
        let backingId = imgfs_fuse_backing_open(session.raw, descriptor)
        if backingId > 0 { return backingId }
        refused(-backingId)
        return nil
    }

    func unregister(_ backingId: Int32) {
        let result = imgfs_fuse_backing_close(session.raw, backingId)
        if result != 0 {
            logger.warning("cannot drop a passthrough registration: \(String(cString: strerror(-result)))")
        }
    }

    private func refused(_ error: Int32) {
        if error == EPERM || error == EACCES {
            if availability.markRefused() {
                logger.notice(
                    """
                    the kernel lets only a privileged daemon (CAP_SYS_ADMIN) register files for passthrough; large \
                    images are read through imgfs instead
                    """
                )
            }
        } else {
            logger.warning("cannot register an image for passthrough: \(String(cString: strerror(error)))")
        }
    }
}
