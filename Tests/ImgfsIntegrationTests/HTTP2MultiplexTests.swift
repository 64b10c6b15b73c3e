import Foundation
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Many cold reads against one HTTPS origin that speaks HTTP/2 (nginx on 127.0.0.1, proxying to a slow test origin):
/// imgfs multiplexes them over few connections instead of stopping at six transfers.
@Suite("HTTP/2 multiplexing", .serialized, .enabled(if: FuseAvailability.available))
struct HTTP2MultiplexTests {
    @Test(
        """
        with the default options, 24 cold reads of an HTTP/2 host run more than 6 at once, over HTTP/2, on at most \
        max-transfers-per-host connections
        """)
    func multiplexesOverFewConnections() throws {
        let upstream = try TestOrigin()
        let images = try Fixtures.smallPNGs(24)
        let running = Locked((now: 0, most: 0))
        upstream.route(prefix: "/slow/") { request in
            running.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            Thread.sleep(forTimeInterval: 0.5)  // a slow origin: what lets transfers overlap
            running.withLock { $0.now -= 1 }
            let index = Int(request.path.dropFirst("/slow/i".count).prefix { $0.isNumber }) ?? 0
            return .ok(images[index], contentType: "image/png")
        }
        let origin = try TLSTests.TLSOrigin(
            files: [:], locations: "location /slow/ { proxy_pass http://127.0.0.1:\(upstream.port); }")
        defer { origin.stop() }
        let mount = try MountedImgfs(arguments: ["--insecure"])
        defer { mount.stop() }
        let wrong = Self.readAtOnce(
            images.indices.map { (mount.path("\(origin.baseURL)/slow/i\($0).png"), images[$0]) })
        #expect(wrong.isEmpty, "every image read whole: \(wrong)")
        let lines = origin.servedRequests(atLeast: images.count)
        #expect(lines.count == images.count, "one request per image: \(lines)")
        #expect(lines.allSatisfy { $0.count == 5 && $0[1] == "HTTP/2.0" }, "all over HTTP/2: \(lines)")
        let connections = TLSTests.TLSOrigin.connectionIDs(lines)
        #expect(connections.count <= 6, "at most max-transfers-per-host connections: \(connections.count)")
        #expect(running.withLock { $0.most } > 6, "requests in flight at once: \(running.withLock { $0.most })")
    }

    @Test("the first response's head, not its end, shows the host speaks HTTP/2: more than 6 start before one ends")
    func learnsFromTheFirstHead() throws {
        let image = try Fixtures.mediumJPEG()
        let names = (0..<16).map { "h\($0).jpg" }
        // Bodies paced at 64 KiB/s per request: each head arrives at once, each body takes seconds.
        let origin = try TLSTests.TLSOrigin(
            files: Dictionary(uniqueKeysWithValues: names.map { ($0, image) }),
            locations: "location ~ ^/h { limit_rate 64k; }")
        defer { origin.stop() }
        let mount = try MountedImgfs(arguments: ["--insecure"])
        defer { mount.stop() }
        let wrong = Self.readAtOnce(names.map { (mount.path("\(origin.baseURL)/\($0)"), image) })
        #expect(wrong.isEmpty, "every image read whole: \(wrong)")
        Poll.until(timeout: 5) { origin.connections.count >= names.count }
        // Each line: uri, protocol, connection, end time, duration: when each request started and ended.
        let spans = origin.connections.compactMap { line -> (start: Double, end: Double)? in
            let fields = line.split(separator: " ")
            guard fields.count == 5, let end = Double(fields[3]), let duration = Double(fields[4]) else { return nil }
            return (end - duration, end)
        }
        #expect(spans.count == names.count)
        // Learning it only when a transfer ends would start no more than 6 before the first one ended.
        let firstEnd = spans.map(\.end).min() ?? 0
        let startedBefore = spans.filter { $0.start < firstEnd }.count
        #expect(startedBefore > 6, "requests started before the first ended: \(startedBefore)")
    }

    /// Reads every path on a thread of its own, all at once; returns the paths whose bytes were not `expected`.
    static func readAtOnce(_ files: [(path: String, expected: [UInt8])]) -> [String] {
        let wrong = Locked<[String]>([])
        let done = DispatchSemaphore(value: 0)
        for (path, expected) in files {
            Thread.detachNewThread {
                if PosixFile.read(path) != .success(expected) { wrong.withLock { $0.append(path) } }
                done.signal()
            }
        }
        for _ in files { #expect(done.wait(timeout: .now() + 60) == .success) }
        return wrong.withLock { $0 }
    }
}
