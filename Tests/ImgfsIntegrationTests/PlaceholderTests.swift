import Foundation
import Glibc
import ImgfsFilesystem
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 18: `--placeholder` serves its image, with its own size, for any URL that fails, while `user.imgfs.error`,
/// the log and the statistics tell the truth.
@Suite("Placeholder", .serialized, .enabled(if: FuseAvailability.available))
struct PlaceholderTests {
    @Test("--placeholder for 404, 500, a non-image body and a timeout; a working URL still reads as itself")
    func placeholderForFailures() throws {
        let images = try Fixtures.smallPNGs(2)
        let placeholder = images[0], real = images[1]
        var slow = OriginResponse.ok(real, contentType: "image/png")
        slow.headerDelay = 5
        let directory = "/tmp/imgfs-placeholder-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(placeholder).write(to: URL(fileURLWithPath: "\(directory)/placeholder.png"))
        try withMountedOrigin([
            "--placeholder", "\(directory)/placeholder.png", "--tune", "retries=0",
            "--tune", "timeout=1"
        ]) { origin, mount in
            origin.route("/500.png", .status(500))
            origin.route("/page.png", .ok(Array("<!DOCTYPE html><html>no</html>".utf8), contentType: "text/html"))
            origin.route("/slow.png", slow)
            origin.route("/real.png", .ok(real, contentType: "image/png"))
            let cases = [
                ("/404.png", "HTTP 404"), ("/500.png", "HTTP 500"), ("/page.png", "not an image"),
                ("/slow.png", "timed out")
            ]
            for (path, why) in cases {
                let file = mount.path(origin.baseURL + path)
                let bytes = FileManager.default.contents(atPath: file).map(Array.init)
                #expect(bytes == placeholder ? true : false, "\(path): \(bytes?.count ?? -1) bytes")
                let size = try ChildProcess.run("/usr/bin/stat", ["-c", "%s", file]).output
                #expect(size == "\(placeholder.count)\n", "\(path): stat says \(size)")
                let error = try ChildProcess.run("/usr/bin/getfattr", ["--only-values", "-n", "user.imgfs.error", file])
                #expect(error.output.lowercased().contains(why.lowercased()), "\(path): \(error.output)")
            }
            let working = FileManager.default.contents(atPath: mount.path(origin.baseURL + "/real.png")).map(Array.init)
            #expect(working == real ? true : false)
            #expect(mount.waitForStatistics { ($0["placeholders_served"] ?? 0) >= 4 }, "\(mount.statistics())")
            #expect(mount.log.contains("serving the placeholder"))
            #expect(mount.log.contains("/404.png") && mount.log.contains("fetch failed"))
        }
    }
}
