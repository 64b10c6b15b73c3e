import Foundation
import ImgfsModel
import ImgfsTestSupport
import Testing

/// `imgfs prefetch` against a real mount: it warms the cache with one request per URL, reports failures with their
/// errno text, reads lists from files and stdin, and prints JSON.
@Suite("Prefetch", .serialized, .enabled(if: FuseAvailability.available))
struct PrefetchTests {
    /// The URLs of a batch served by one origin: good images (a digest-named long URL among them), a 404 and an
    /// HTML page served as 200.
    struct Batch {
        let good: [(url: String, path: String, body: [UInt8])]
        let missing: String
        let page: String
        let longURL: String

        /// Every URL, in list order.
        var urls: [String] { good.map(\.url) + [missing, page] }
        /// Every request target the origin sees for the list.
        var paths: [String] { good.map(\.path) + ["/missing.png", "/page.html"] }
        /// The bytes of all the good images.
        var goodBytes: Int { good.reduce(0) { $0 + $1.body.count } }

        init(origin: TestOrigin) throws {
            let icons = try Fixtures.smallPNGs(8)
            var good: [(url: String, path: String, body: [UInt8])] = icons.enumerated().map { index, body in
                ("\(origin.baseURL)/icons/\(index).png", "/icons/\(index).png", body)
            }
            good.append(("\(origin.baseURL)/photo.jpg", "/photo.jpg", try Fixtures.mediumJPEG()))
            let signed = "/signed.png?sig=" + String(repeating: "a", count: 5_000)
            good.append(("\(origin.baseURL)\(signed)", signed, icons[0]))
            for (_, path, body) in good {
                origin.route(path, .ok(body, contentType: path.hasSuffix(".jpg") ? "image/jpeg" : "image/png"))
            }
            origin.route(
                "/page.html",
                .ok(
                    Array("<!DOCTYPE html><html><body>not an image</body></html>".utf8),
                    contentType: "text/html"))
            self.good = good
            missing = "\(origin.baseURL)/missing.png"
            page = "\(origin.baseURL)/page.html"
            longURL = good.last!.url
        }

        /// The list file's text: the URLs with a comment and blank lines among them.
        var listText: String {
            let lines = urls.enumerated().map { index, url in index == 3 ? "  \(url)  \n\n# more\n" : "\(url)\n" }
            return "# images to warm\n\n" + lines.joined()
        }

        /// The two failure lines the command must print.
        var failureLines: [String] {
            ["failed: \(missing): \(missingReason)", "failed: \(page): \(pageReason)"]
        }

        /// What prefetch says of the two failures: the daemon's reason, then the errno's text.
        var missingReason: String { "HTTP 404 Not Found (No such file or directory)" }
        var pageReason: String {
            "not an image: the body is HTML (starts with \"<!DOCTYPE html\") (--allow-any-type serves it anyway) "
                + "(Wrong medium type)"
        }

        /// The start of the summary line, up to the MiB figure.
        var summaryStart: String {
            let mebibytes = String(format: "%.2f", Double(goodBytes) / 1_048_576)
            return "prefetched \(good.count) of \(urls.count) images (\(mebibytes) MiB in "
        }
    }

    private func summaryLine(_ output: String) -> String? {
        output.split(separator: "\n").last { $0.hasPrefix("prefetched ") }.map(String.init)
    }

    /// The path of `url` that `imgfs path --mount` would print (the digest name for the long URL).
    private func path(of url: String, in mount: MountedImgfs) throws -> String {
        let form = ImagePath.form(for: try ImageURL(url), mountPointLength: mount.mountPoint.utf8.count)
        return "\(mount.mountPoint)/\(form.relativePath)"
    }

    /// An origin serving a ``Batch``, a fresh mount, and the batch's list file in the mount's root: `body` gets
    /// them; the origin and the mount are stopped when it returns or throws.
    private func withBatch(_ body: (TestOrigin, Batch, MountedImgfs, _ list: String) throws -> Void) throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let batch = try Batch(origin: origin)
        let mount = try MountedImgfs()
        defer { mount.stop() }
        let list = "\(mount.root)/list.txt"
        try batch.listText.write(toFile: list, atomically: true, encoding: .utf8)
        try body(origin, batch, mount, list)
    }

    @Test("a list file: one request per URL, the 404 and the HTML page reported, exit 1; later reads hit the cache")
    func listFile() throws {
        try withBatch { origin, batch, mount, list in
            #expect(try path(of: batch.longURL, in: mount).contains("/img/~"), "the long URL needs a digest name")

            let run = try ChildProcess.run(MountedImgfs.binary, ["prefetch", mount.mountPoint, list])
            #expect(run.status == 1, "\(run.output)")
            let lines = run.output.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.hasPrefix("failed: ") } == batch.failureLines)
            #expect(lines.last?.hasPrefix(batch.summaryStart) == true, "\(run.output)")
            #expect(lines.last?.hasSuffix("MiB/s), 2 failed") == true, "\(run.output)")
            for path in batch.paths {
                #expect(origin.requestCount(path) == 1, "\(path.prefix(40)) requested once")
            }
            #expect(origin.totalRequests == batch.urls.count)

            for (url, _, body) in batch.good {
                #expect(PosixFile.read(try path(of: url, in: mount)) == .success(body), "\(url.prefix(60)) read again")
            }
            #expect(origin.totalRequests == batch.urls.count, "reading the prefetched images made no request")
        }
    }

    @Test("the list on stdin, then --json: the same counts, and the good images are not requested again")
    func standardInputAndJSON() throws {
        try withBatch { origin, batch, mount, list in
            let pipeline = "cat '\(list)' | '\(MountedImgfs.binary)' prefetch '\(mount.mountPoint)' -"
            let piped = try ChildProcess.run("/bin/sh", ["-c", pipeline])
            #expect(piped.status == 1, "\(piped.output)")
            let failureLines = piped.output.split(separator: "\n").filter { $0.hasPrefix("failed: ") }.map(String.init)
            #expect(failureLines == batch.failureLines)
            #expect(summaryLine(piped.output)?.hasPrefix(batch.summaryStart) == true, "\(piped.output)")
            #expect(origin.totalRequests == batch.urls.count)

            let json = try ChildProcess.run(
                MountedImgfs.binary,
                ["prefetch", "--json", "--concurrency", "4", mount.mountPoint, list])
            #expect(json.status == 1, "\(json.output)")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any],
                "\(json.output)")
            #expect(object["total"] as? Int == batch.urls.count)
            #expect(object["succeeded"] as? Int == batch.good.count)
            #expect(object["failed"] as? Int == 2)
            #expect(object["bytes"] as? Int == batch.goodBytes)
            #expect((object["seconds"] as? Double).map { $0 >= 0 && $0 < 30 } == true)
            let failures = try #require(object["failures"] as? [[String: String]])
            #expect(
                failures == [
                    ["url": batch.missing, "error": batch.missingReason],
                    ["url": batch.page, "error": batch.pageReason]
                ])
            for (_, path, _) in batch.good {
                #expect(origin.requestCount(path) == 1, "\(path.prefix(40)) came from the cache on the later runs")
            }
            #expect(origin.requestCount("/missing.png") == 1, "the 404 is remembered")
        }
    }

    @Test("slow URLs are read in parallel on --concurrency threads")
    func parallel() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route(prefix: "/slow/") { _ in
                var response = OriginResponse.ok(icon, contentType: "image/png")
                response.headerDelay = 0.5
                return response
            }
            let list = "\(mount.root)/slow.txt"
            let urls = (0..<12).map { "\(origin.baseURL)/slow/\($0).png\n" }
            try urls.joined().write(toFile: list, atomically: true, encoding: .utf8)
            let start = Date()
            let run = try ChildProcess.run(
                MountedImgfs.binary,
                ["prefetch", "--concurrency", "12", mount.mountPoint, list])
            let elapsed = Date().timeIntervalSince(start)
            #expect(run.status == 0, "\(run.output)")
            #expect(summaryLine(run.output)?.hasPrefix("prefetched 12 of 12 images (") == true, "\(run.output)")
            #expect(summaryLine(run.output)?.hasSuffix(", 0 failed") == true)
            #expect(elapsed < 4, "12 reads of 0.5 s took \(elapsed) s (6 s one at a time)")
            #expect(origin.totalRequests == 12)
        }
    }

    @Test("not a mount or an unreadable list exits 2; a line that is not a URL fails with its reason; --quiet")
    func usageErrors() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/a.png", .ok(icon, contentType: "image/png"))
            let list = "\(mount.root)/list.txt"
            try "\(origin.baseURL)/a.png\nftp://example.com/b.png\n".write(
                toFile: list, atomically: true, encoding: .utf8)

            let notMount = try ChildProcess.run(MountedImgfs.binary, ["prefetch", mount.root, list])
            #expect(notMount.status == 2, "\(notMount.output)")
            #expect(notMount.output.contains("is not an imgfs mount"))
            let noList = try ChildProcess.run(
                MountedImgfs.binary,
                ["prefetch", mount.mountPoint, "\(mount.root)/absent.txt"])
            #expect(noList.status == 2, "\(noList.output)")
            #expect(noList.output.contains("No such file or directory"))
            #expect(origin.totalRequests == 0)

            let run = try ChildProcess.run(MountedImgfs.binary, ["prefetch", "--quiet", mount.mountPoint, list])
            #expect(run.status == 1, "\(run.output)")
            let reason = "not an http or https URL (the scheme is \"ftp\")"
            #expect(run.output.contains("failed: ftp://example.com/b.png: \(reason)\n"))
            #expect(summaryLine(run.output)?.hasPrefix("prefetched 1 of 2 images (") == true, "\(run.output)")
            #expect(origin.requestCount("/a.png") == 1)
        }
    }
}
