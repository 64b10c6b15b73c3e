import Foundation
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Cold reads against one HTTPS origin that speaks HTTP/1.1 only (nginx on 127.0.0.1, logging each request's
/// connection): imgfs keeps its connections for the next transfers, however few run for a while.
@Suite("Connection reuse", .serialized, .enabled(if: FuseAvailability.available))
struct ConnectionReuseTests {
    /// Wave, trickle, wave: the trickle runs one transfer at a time, which is when curl's own connection cache (four
    /// idle connections per transfer running) closed the others; the second wave then had to open them again.
    @Test(
        """
        16 readers, then one, then 16 again, over HTTP/1.1 with 16 transfers per host: every request on at most 16 \
        connections, opened once
        """)
    func keepsConnectionsThroughALull() throws {
        let images = try Fixtures.smallPNGs(48)
        let names = (0..<160).map { "i\($0).png" }
        let files = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, images[$0 % images.count]) })
        let origin = try TLSTests.TLSOrigin(files: files, http2: false)
        defer { origin.stop() }
        let mount = try MountedImgfs(arguments: ["--insecure", "--tune", "max-transfers-per-host=16"])
        defer { mount.stop() }
        let base = origin.baseURL
        func read(_ range: Range<Int>, readers: Int) -> [String] {
            let next = Locked(range.lowerBound)
            let wrong = ParallelThreads.run(readers) { _ -> [String] in
                var wrong: [String] = []
                while true {
                    let index = next.withLock { value -> Int in
                        defer { value += 1 }
                        return value
                    }
                    guard index < range.upperBound else { return wrong }
                    let name = names[index]
                    if PosixFile.read(mount.path("\(base)/\(name)")) != .success(files[name]!) {
                        wrong.append(name)
                    }
                }
            }
            return wrong.flatMap { $0 }
        }
        #expect(read(0..<64, readers: 16).isEmpty, "the first wave read whole")
        #expect(read(64..<96, readers: 1).isEmpty, "the trickle read whole")
        #expect(read(96..<160, readers: 16).isEmpty, "the second wave read whole")
        let lines = origin.servedRequests(atLeast: names.count)
        #expect(lines.count == names.count, "one request per image: \(lines.count)")
        #expect(lines.allSatisfy { $0.count == 5 && $0[1] == "HTTP/1.1" }, "all over HTTP/1.1")
        let connections = TLSTests.TLSOrigin.connectionIDs(lines)
        #expect(connections.count <= 16, "connections opened: \(connections.count), where 16 serve every request")
    }
}
