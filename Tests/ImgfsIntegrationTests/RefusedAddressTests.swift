import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 14, item 9: an address the policy refuses is refused before a socket is opened to it, so no port can be
/// probed through imgfs (open and closed ports answer the same errno, and the origin sees no connection).
@Suite("Refused addresses", .serialized, .enabled(if: FuseAvailability.available))
struct RefusedAddressTests {
    @Test("a name resolving to a refused address: EACCES for open and closed ports, and no TCP connection at all")
    func refusedBeforeConnecting() throws {
        let closed = try TestOrigin()
        let closedPort = closed.port
        closed.stop()
        try withMountedOrigin(["--deny-private-networks"]) { origin, mount in
            origin.route("/icon.png", .ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png"))
            // `localhost` is a name: the host check cannot refuse it, only the address it resolves to can.
            let open = PosixFile.read(mount.path("http://localhost:\(origin.port)/icon.png"))
            let shut = PosixFile.read(mount.path("http://localhost:\(closedPort)/icon.png"))
            #expect(open == .failure(Errno(EACCES)))
            #expect(shut == .failure(Errno(EACCES)), "a closed port answers like an open one")
            #expect(origin.connectionCount == 0, "no connection was opened to the refused address")
            #expect(mount.log.contains("loopback"))
        }
    }
}
