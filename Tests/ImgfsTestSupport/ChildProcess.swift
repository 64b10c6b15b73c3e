import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process (typically the daemon under test) started with `posix_spawn`.
///
/// Guarantees:
/// - The child starts with an empty signal mask and SIGINT, SIGTERM, SIGHUP and
///   SIGPIPE at their default actions, whatever the spawning thread had blocked or
///   ignored (Swift Testing's threads block SIGTERM, for instance).
/// - stdin is `/dev/null`; stdout and stderr are appended to `outputPath` (or `/dev/null`).
/// - The child is reaped exactly once; its status is remembered, so `wait`,
///   `isRunning` and `signal` stay correct afterwards and never touch a reused pid.
/// - `deinit` kills (SIGKILL) and reaps a child that is still running.
public final class ChildProcess: @unchecked Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// Exit code (or 128 + signal number) once the child has been reaped.
    private let reaped = Mutex<Int32?>(nil)

    private init(pid: pid_t) {
        self.pid = pid
    }

    deinit {
        kill9AndReap()
    }

    // MARK: - Spawning

    /// Starts `executable` with `arguments` (not including argv[0]). A name without
    /// `/` is looked up in `PATH`. `environment` nil means this process's environment.
    /// Throws `TestSupportError.systemCall` if the child cannot be started.
    public static func spawn(
        _ executable: String, _ arguments: [String],
        environment: [String: String]? = nil,
        outputPath: String? = nil
    ) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        try check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init")
        defer { posix_spawn_file_actions_destroy(&actions) }
        try check(
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0),
            "posix_spawn_file_actions_addopen(stdin)")
        try check(
            posix_spawn_file_actions_addopen(
                &actions, 1, outputPath ?? "/dev/null",
                O_WRONLY | O_CREAT | O_APPEND, 0o644),
            "posix_spawn_file_actions_addopen(stdout)")
        try check(posix_spawn_file_actions_adddup2(&actions, 1, 2), "posix_spawn_file_actions_adddup2")

        var attributes = posix_spawnattr_t()
        try check(posix_spawnattr_init(&attributes), "posix_spawnattr_init")
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        try check(posix_spawnattr_setsigmask(&attributes, &emptyMask), "posix_spawnattr_setsigmask")
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        try check(posix_spawnattr_setsigdefault(&attributes, &defaults), "posix_spawnattr_setsigdefault")
        let flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        try check(posix_spawnattr_setflags(&attributes, Int16(flags)), "posix_spawnattr_setflags")

        let argv = CStringArray([executable] + arguments)
        let envp = environment.map { CStringArray($0.map { "\($0.key)=\($0.value)" }) }
        var pid: pid_t = 0
        let rc = argv.withPointers { args in
            let spawnFunction = executable.contains("/") ? posix_spawn : posix_spawnp
            guard let envp else { return spawnFunction(&pid, executable, &actions, &attributes, args, environ) }
            return envp.withPointers { spawnFunction(&pid, executable, &actions, &attributes, args, $0) }
        }
        try check(rc, "posix_spawn(\(executable))")
        return ChildProcess(pid: pid)
    }

    /// Runs a short command to completion and returns its exit status (128 + signal
    /// if signalled) and its combined stdout and stderr. Throws
    /// `TestSupportError.timedOut` (after killing it) if it runs longer than `timeout`.
    public static func run(
        _ executable: String, _ arguments: [String],
        timeout: Double = 60
    ) throws -> (status: Int32, output: String) {
        var template = Array("/tmp/imgfs-run-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw TestSupportError.fromErrno("mkstemp") }
        _ = close(fd)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { _ = unlink(path) }

        let child = try spawn(executable, arguments, outputPath: path)
        let status = child.wait(timeout: timeout)
        if status == nil { child.kill9AndReap() }
        let data = FileManager.default.contents(atPath: path) ?? Data()
        let output = String(decoding: data, as: UTF8.self)
        guard let status else {
            let command = ([executable] + arguments).joined(separator: " ")
            throw TestSupportError.timedOut(command: command, seconds: timeout, output: output)
        }
        return (status, output)
    }

    // MARK: - Controlling

    /// Sends `sig` to the child; does nothing once the child has been reaped.
    public func signal(_ sig: Int32) {
        reaped.withLock { status in
            if status == nil { _ = kill(pid, sig) }
        }
    }

    /// Waits up to `timeout` seconds (polling every 10 ms) for the child to exit.
    /// Returns its exit code, 128 + signal number if a signal ended it, or nil if it
    /// is still running at the deadline.
    public func wait(timeout: Double) -> Int32? {
        var status: Int32?
        Poll.until(timeout: timeout) {
            status = poll(blocking: false)
            return status != nil
        }
        return status
    }

    /// True until the child has exited (it is reaped when found to have exited).
    public var isRunning: Bool { poll(blocking: false) == nil }

    /// Kills the child with SIGKILL (if still running) and waits until it is reaped.
    public func kill9AndReap() {
        reaped.withLock { status in
            if status == nil { _ = kill(pid, SIGKILL) }
        }
        _ = poll(blocking: true)
    }

    // MARK: - Reaping

    /// Reaps the child if it has exited (or waits for it when `blocking`) and returns
    /// the remembered status; nil while still running.
    private func poll(blocking: Bool) -> Int32? {
        reaped.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
                if result == pid { break }
                if result < 0 && errno == EINTR { continue }
                if result < 0 {
                    status = -1
                    return -1
                }
                return nil
            }
            let signalled = raw & 0x7f
            status = signalled == 0 ? (raw >> 8) & 0xff : 128 + signalled
            return status
        }
    }

    private static func check(_ rc: Int32, _ name: String) throws {
        guard rc == 0 else { throw TestSupportError.systemCall(name, errno: rc) }
    }
}
