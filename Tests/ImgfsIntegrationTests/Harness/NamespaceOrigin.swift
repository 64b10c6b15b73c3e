import Foundation
import Glibc
import ImgfsTestSupport

/// An HTTP origin on an address that is not loopback, for mounts that refuse private networks (`-o allow_other` turns
/// `--deny-private-networks` on): a network namespace of the test's own (`ip netns add`) with 198.51.100.7
/// (TEST-NET-2, which the policy allows) on its `lo`, and python's `http.server` serving ``directory`` there. A daemon
/// started through ``launcher`` joins the namespace's network only, so its mount stays visible to the test.
///
/// Guarantees: `stop()` kills the server by PID, deletes the namespace and removes the directory; it runs at most
/// once, and from `deinit` too. Nothing outside the namespace is contacted.
final class NamespaceOrigin: @unchecked Sendable {
    struct StartFailure: Error, CustomStringConvertible {
        let description: String
    }

    static let address = "198.51.100.7"
    let namespace: String
    let directory: String
    let baseURL = "http://\(NamespaceOrigin.address):8080"
    private var server: ChildProcess?
    private var stopped = false

    /// Runs a command in the namespace's network, the way the daemon is started.
    var launcher: [String] { ["/usr/bin/nsenter", "--net=/run/netns/\(namespace)"] }

    init() throws {
        let tag = UUID().uuidString.prefix(6).lowercased()
        namespace = "imgfs-\(getpid() % 100_000)-\(tag)"
        directory = "/tmp/imgfs-test-\(getpid())-origin-\(tag)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            for command in [
                ["netns", "add", namespace], ["-n", namespace, "link", "set", "lo", "up"],
                ["-n", namespace, "addr", "add", "\(Self.address)/32", "dev", "lo"]
            ] {
                let result = try ChildProcess.run("/usr/sbin/ip", command)
                guard result.status == 0 else {
                    let line = command.joined(separator: " ")
                    throw StartFailure(description: "ip \(line) (needs root): \(result.output)")
                }
            }
            server = try ChildProcess.spawn(
                launcher[0],
                Array(launcher.dropFirst()) + [
                    "python3", "-m", "http.server", "8080", "--bind", Self.address, "--directory", directory
                ])
            let probe = "import socket; socket.create_connection(('\(Self.address)', 8080), 1)"
            let listening = Poll.until(timeout: 10, interval: 0.1) {
                (try? ChildProcess.run(launcher[0], Array(launcher.dropFirst()) + ["python3", "-c", probe]))?.status
                    == 0
            }
            guard listening else { throw StartFailure(description: "the origin in \(namespace) did not listen") }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Serves `bytes` as `name` from now on.
    func serve(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(name)"))
    }

    /// Stops the server, deletes the namespace and the directory.
    func stop() {
        guard !stopped else { return }
        stopped = true
        server?.kill9AndReap()
        _ = try? ChildProcess.run("/usr/sbin/ip", ["netns", "del", namespace])
        try? FileManager.default.removeItem(atPath: directory)
    }
}
