import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 15 item 5: a browser opens images through the mount by the `file://` URLs `imgfs path --file-url` prints.
@Suite("Browser", .serialized, .enabled(if: FuseAvailability.available))
struct BrowserTests {
    /// Headless Chromium with everything that would reach the network turned off: no background networking,
    /// component updates, sync, metrics uploads, crash reports or default apps; every host name fails to resolve and
    /// any connection would go to a closed proxy port on 127.0.0.1.
    static let chromiumArguments = [
        "--headless", "--disable-gpu", "--no-sandbox", "--allow-file-access-from-files",
        "--disable-background-networking", "--no-first-run", "--disable-component-update", "--disable-sync",
        "--metrics-recording-only", "--disable-breakpad", "--disable-default-apps", "--no-default-browser-check",
        "--disable-domain-reliability", "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=20000"
    ]

    @Test("headless Chromium decodes all 30 images of a page whose <img> sources are imgfs path --file-url URLs")
    func chromiumLoadsThirtyImages() throws {
        let chromium = "/usr/bin/chromium"
        try #require(
            FileManager.default.isExecutableFile(atPath: chromium), "apt-get install chromium (install-deps --test)")
        let icons = try Fixtures.smallPNGs(30)
        try withMountedOrigin { origin, mount in
            let urls = icons.enumerated().map { index, icon in
                origin.route("/page/\(index).png", .ok(icon, contentType: "image/png"))
                return "\(origin.baseURL)/page/\(index).png"
            }
            let printed = try ChildProcess.run(
                MountedImgfs.binary, ["path", "--file-url", "--mount", mount.mountPoint] + urls,
                timeout: 60)
            #expect(printed.status == 0, "\(printed.output)")
            let sources = printed.output.split(separator: "\n").map(String.init)
            try #require(sources.count == 30)
            #expect(
                sources.allSatisfy { $0.hasPrefix("file://\(mount.mountPoint)/img/http%253A%252F%252F") },
                "\(sources[0])")
            let script = """
                window.addEventListener('load', () => {
                  document.getElementById('out').textContent =
                    Array.from(document.images).map(i => i.complete + ':' + i.naturalWidth).join(' ');
                });
                """
            let page =
                "<html><body>" + sources.map { "<img src=\"\($0)\">" }.joined()
                + "<pre id=\"out\">pending</pre><script>\(script)</script></body></html>"
            let pagePath = "\(mount.root)/page.html"
            try page.write(toFile: pagePath, atomically: true, encoding: .utf8)
            let run = try ChildProcess.run(
                chromium,
                Self.chromiumArguments + [
                    "--user-data-dir=\(mount.root)/chromium",
                    "--dump-dom", "file://\(pagePath)"
                ],
                timeout: 120)
            let dumped =
                run.output.components(separatedBy: "<pre id=\"out\">").dropFirst().first?
                .components(separatedBy: "</pre>").first ?? ""
            let widths = dumped.split(separator: " ").map(String.init)
            #expect(widths.count == 30, "chromium printed: \(run.output.suffix(2000))")
            #expect(widths.allSatisfy { $0 == "true:48" }, "every image decoded at 48 px: \(dumped)")
            #expect(origin.totalRequests == 30, "each image fetched once through the mount")
        }
    }
}
