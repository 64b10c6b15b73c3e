import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 18: `--proxy` through a recording proxy on 127.0.0.1 (absolute-form GET for http, CONNECT for https).
@Suite("Proxy", .serialized, .enabled(if: FuseAvailability.available))
struct ProxyTests {
    @Test("--proxy: http goes through the proxy as an absolute-form GET, --noproxy bypasses it")
    func httpThroughProxy() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin(), proxy = try RecordingProxy()
        defer { origin.stop(); proxy.stop() }
        origin.route("/via-proxy.png", .ok(image, contentType: "image/png"))
        origin.route("/direct.png", .ok(image, contentType: "image/png"))
        let mount = try MountedImgfs(arguments: [
            "--proxy", proxy.url, "--noproxy", "localhost",
            "--header", "X-Through: proxy"
        ])
        defer { mount.stop() }
        let viaProxy = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/via-proxy.png")).map(
            Array.init)
        let same = viaProxy == image
        #expect(same, "log:\n\(mount.log)")
        let viaLocalhost = "http://localhost:\(origin.port)/direct.png"
        let direct = FileManager.default.contents(atPath: mount.path(viaLocalhost)).map(Array.init)
        #expect(direct?.count == image.count)
        let entries = proxy.entries
        #expect(entries.count == 1, "\(entries.map(\.target))")
        #expect(entries.first?.method == "GET")
        #expect(entries.first?.target == origin.baseURL + "/via-proxy.png")
        #expect(entries.first?.headers.contains { $0.0 == "X-Through" && $0.1 == "proxy" } == true)
        #expect(origin.requestCount("/via-proxy.png") == 1 && origin.requestCount("/direct.png") == 1)
    }

    @Test("without --proxy, libcurl's http_proxy and NO_PROXY environment variables are honoured")
    func proxyFromEnvironment() throws {
        let image = try Fixtures.smallPNGs(1)[0]
        let origin = try TestOrigin(), proxy = try RecordingProxy()
        defer { origin.stop(); proxy.stop() }
        origin.route("/env.png", .ok(image, contentType: "image/png"))
        var environment = ProcessInfo.processInfo.environment
        environment["http_proxy"] = proxy.url
        environment["NO_PROXY"] = "localhost"
        let mount = try MountedImgfs(environment: environment)
        defer { mount.stop() }
        #expect(PosixFile.read(mount.path(origin.baseURL + "/env.png")) == .success(image))
        #expect(PosixFile.read(mount.path("http://localhost:\(origin.port)/env.png")) == .success(image))
        #expect(proxy.entries.map(\.target) == [origin.baseURL + "/env.png"])
        #expect(origin.requestCount("/env.png") == 2)
    }

    @Test("--proxy with https: a CONNECT tunnel to the origin, TLS end to end")
    func httpsThroughProxy() throws {
        let image = try Fixtures.mediumJPEG()
        let origin = try TLSTests.TLSOrigin(files: ["t.jpg": image])
        let proxy = try RecordingProxy()
        defer { origin.stop(); proxy.stop() }
        let mount = try MountedImgfs(arguments: ["--proxy", proxy.url, "--insecure"])
        defer { mount.stop() }
        let read = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/t.jpg")).map(Array.init)
        let same = read == image
        #expect(same, "\(read?.count ?? -1) bytes; log:\n\(mount.log)")
        #expect(proxy.entries.first?.method == "CONNECT")
        #expect(proxy.entries.first?.target == "127.0.0.1:\(origin.port)")
        #expect(origin.requests.contains { $0.hasPrefix("/t.jpg") && $0.hasSuffix(" 200") }, "\(origin.requests)")
    }
}
