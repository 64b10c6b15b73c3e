import Glibc
import ImgfsModel
import ImgfsPipeline
import Logging

/// Memory pressure from a Linux PSI trigger ("some" memory stall above a threshold within a window), polled for
/// POLLPRI on a thread of its own.
///
/// Guarantees: the trigger is registered by the initializer, so a source that exists works; `onPressure` is called
/// only from the polling thread (never twice at once) and at most once per `minimumInterval`; `stop` wakes and joins
/// that thread and closes every descriptor, is idempotent, and no call is made after it returns. If the pressure file
/// goes away (POLLERR, the cgroup was removed) the thread logs it and ends. A source is started once; after `stop` it
/// stays stopped. The thread has SIGINT, SIGTERM and SIGHUP blocked.
public final class PSIMemoryPressure: MemoryPressureSource, Sendable {
    /// The pressure file the trigger is registered on.
    public let path: String
    /// The trigger text written to it, such as "some 150000 2000000".
    public let trigger: String
    /// The least time between two calls of `onPressure`.
    public let minimumInterval: Duration

    private let triggerFD: Int32
    private let logger: Logger
    private let lifecycle = PollingLifecycle()

    /// Registers a trigger for `threshold` of stall within `window` on `path`, or when `path` is nil on the own cgroup
    /// v2 group's `memory.pressure` if there is one, else /proc/pressure/memory (the first that accepts the trigger).
    /// Keep `window` at 2 s or above: shorter windows need CAP_SYS_RESOURCE. Throws when no file accepts it.
    public init(
        path: String? = nil,
        threshold: Duration = .milliseconds(150),
        window: Duration = .seconds(2),
        minimumInterval: Duration = .seconds(5),
        logger: Logger
    ) throws(PSIRegistrationError) {
        let trigger = PSITrigger.text(threshold: threshold, window: window)
        let candidates = path.map { [$0] } ?? CgroupPaths.pressureFiles()
        guard threshold > .zero, window > .zero, threshold <= window else {
            throw PSIRegistrationError(
                path: candidates.last ?? "", trigger: trigger,
                reason: "the threshold must be positive and not above the window")
        }
        var lastError = PSIRegistrationError(path: "", trigger: trigger, reason: "no pressure file")
        var registered: (path: String, fd: Int32)?
        for candidate in candidates {
            do {
                let hint = PSITrigger.windowHint(window)
                registered = (candidate, try PSITrigger.register(path: candidate, trigger: trigger, invalidHint: hint))
                break
            } catch {
                logger.debug("PSI trigger refused", metadata: ["error": "\(error)"])
                lastError = error
            }
        }
        guard let registered else { throw lastError }
        self.path = registered.path
        self.triggerFD = registered.fd
        self.trigger = trigger
        self.minimumInterval = minimumInterval
        self.logger = logger
    }

    /// Like the initializer with the system's pressure file, but logs the reason and returns nil when the trigger
    /// cannot be registered.
    public static func make(
        threshold: Duration = .milliseconds(150),
        window: Duration = .seconds(2),
        minimumInterval: Duration = .seconds(5),
        logger: Logger
    ) -> PSIMemoryPressure? {
        do {
            return try PSIMemoryPressure(
                threshold: threshold, window: window, minimumInterval: minimumInterval, logger: logger)
        } catch {
            logger.notice("PSI memory pressure unavailable", metadata: ["error": "\(error)"])
            return nil
        }
    }

    deinit {
        // A running source is retained by its thread, so this runs when it was never started, was stopped, or its
        // thread ended by itself (the pressure file went away): release whatever is left.
        stop()
    }

    /// Starts the polling thread and returns at once. Ignored (with a log line) when already started or stopped.
    public func start(_ onPressure: @escaping @Sendable (_ reason: String) -> Void) {
        let started: Bool
        do {
            started = try lifecycle.start(name: "imgfs-psi") { wakeFD in
                self.run(wakeFD: wakeFD, onPressure: onPressure)
            }
        } catch {
            logger.error("cannot start the PSI polling thread", metadata: ["error": "\(error)"])
            return
        }
        if started {
            logger.info("watching memory pressure with PSI", metadata: ["file": "\(path)", "trigger": "\(trigger)"])
        } else {
            logger.debug("PSI memory pressure source not started (already started or stopped)")
        }
    }

    /// Stops the polling thread, joins it and closes the trigger; idempotent. Called from inside `onPressure` it
    /// returns at once and the thread ends when the handler returns.
    public func stop() {
        if lifecycle.stop() { close(triggerFD) }
    }

    private var isStopped: Bool { lifecycle.isStopped }

    private func run(wakeFD: Int32, onPressure: @Sendable (String) -> Void) {
        var limiter = RateLimiter(minimumInterval: minimumInterval)
        var fds = [
            pollfd(fd: triggerFD, events: Int16(POLLPRI), revents: 0),
            pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        ]
        while !isStopped {
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                let code = errno
                if code == EINTR { continue }
                logger.error(
                    "PSI poll failed; memory pressure is no longer watched",
                    metadata: ["error": "\(SystemFile.describe(errno: code))"])
                return
            }
            if fds[1].revents != 0 { return }
            let events = Int32(fds[0].revents)
            if events & (POLLERR | POLLNVAL) != 0 {
                logger.warning(
                    "PSI pressure file went away; memory pressure is no longer watched",
                    metadata: ["file": "\(path)"])
                return
            }
            guard events & POLLPRI != 0, limiter.allow(), !isStopped else { continue }
            let seen = PSITrigger.someLine(path: path).map { "; \($0)" } ?? ""
            onPressure("PSI memory stall over \(trigger) on \(path)\(seen)")
        }
    }
}
