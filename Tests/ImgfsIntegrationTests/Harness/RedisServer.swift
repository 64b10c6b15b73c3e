import Foundation
import Glibc
import ImgfsTestSupport

/// A real `redis-server` (Debian's) on 127.0.0.1 at a free port, started by the test and stopped by PID.
///
/// Nothing is persisted (no RDB, no AOF); `stop()` sends SIGTERM and, if the server does not exit, SIGKILL; a stopped
/// server can be started again on the same port (`restart()`). Tests call `stop()` in a `defer`; the server's log file
/// goes when the object does.
final class RedisServer: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let serverPath = "/usr/bin/redis-server"
    static let cliPath = "/usr/bin/redis-cli"
    /// Whether the Redis tests can run (the test command installs redis-server).
    static var available: Bool { FileManager.default.isExecutableFile(atPath: serverPath) }

    let port: Int
    let logPath: String
    /// The password clients must give (`requirepass`), if any.
    let password: String?
    private var process: ChildProcess?

    init(password: String? = nil) throws {
        self.password = password
        port = try Self.freePort()
        logPath = "/tmp/imgfs-redis-\(getpid())-\(port).log"
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// The `--shared-cache` address.
    var address: String { "redis://127.0.0.1:\(port)" }

    /// Starts the server (again) and waits until it answers PING.
    func start() throws {
        process = try ChildProcess.spawn(
            Self.serverPath,
            [
                "--port", "\(port)", "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--daemonize", "no"
            ]
                + (password.map { ["--requirepass", $0] } ?? []),
            outputPath: logPath)
        let answers = { (try? self.cli("PING")) == "PONG" }
        guard Poll.until(timeout: 10, interval: 0.02, { answers() || self.process?.isRunning != true }), answers()
        else {
            stop()
            throw Failure(description: "redis-server did not start on port \(port)")
        }
    }

    /// Stops the server by PID (SIGTERM, then SIGKILL).
    func stop() {
        guard let process else { return }
        self.process = nil
        process.signal(SIGTERM)
        if process.wait(timeout: 10) == nil { process.kill9AndReap() }
    }

    /// Sends `sig` to the server (SIGSTOP makes it a server that stops answering, SIGCONT brings it back).
    func signal(_ sig: Int32) {
        process?.signal(sig)
    }

    /// Runs a redis-cli command against the server; its output without the trailing newline.
    @discardableResult
    func cli(_ arguments: String...) throws -> String {
        try cli(arguments)
    }

    func cli(_ arguments: [String]) throws -> String {
        let auth = password.map { ["-a", $0, "--no-auth-warning"] } ?? []
        let result = try ChildProcess.run(
            Self.cliPath, ["-h", "127.0.0.1", "-p", "\(port)"] + auth + arguments,
            timeout: 10)
        guard result.status == 0 else { throw Failure(description: "redis-cli \(arguments): \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sets `key` to the bytes `value` exactly (any bytes: given to redis-cli on its standard input, `-x`).
    func set(_ key: String, bytes value: [UInt8]) throws {
        let file = "/tmp/imgfs-redis-value-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(value).write(to: URL(fileURLWithPath: file))
        let auth = password.map { " -a '\($0)' --no-auth-warning" } ?? ""
        let result = try ChildProcess.run(
            "/bin/sh", ["-c", "'\(Self.cliPath)' -h 127.0.0.1 -p \(port)\(auth) -x SET '\(key)' < '\(file)'"],
            timeout: 10)
        guard result.status == 0, result.output.hasPrefix("OK") else {
            throw Failure(description: "redis-cli -x SET \(key): \(result.output)")
        }
    }

    /// The keys matching `pattern`.
    func keys(_ pattern: String) throws -> [String] {
        try cli("--scan", "--pattern", pattern).split(separator: "\n").map(String.init)
    }

    /// A TCP port nobody listens on now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
