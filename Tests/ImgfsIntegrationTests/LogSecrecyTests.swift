import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 36, item 7: the log holds no secrets. Header values are masked whatever the header, the query strings of
/// logged URLs are shortened below debug level, and the log file is its user's alone.
@Suite("Log secrecy", .serialized, .enabled(if: FuseAvailability.available))
struct LogSecrecyTests {
    @Test("a background mount at info level: X-Api-Key masked, queries shortened, the log file 0600")
    func infoLevel() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        origin.route("/signed.png?sig=s3cr3t-signature", .ok(image, contentType: "image/png"))
        let mount = try BackgroundMount(arguments: [
            "--header", "X-Api-Key: k-secret-value", "--header", "Authorization: Bearer t0ken"
        ])
        defer { mount.stop() }
        let signed = "\(mount.mountPoint)/img/\(NameCodec.encode(origin.baseURL + "/signed.png?sig=s3cr3t-signature"))"
        let missing = "\(mount.mountPoint)/img/\(NameCodec.encode(origin.baseURL + "/missing.png?token=s3cr3t-token"))"
        #expect(PosixFile.read(signed) == .success(image))
        #expect(PosixFile.read(missing) == .failure(Errno(ENOENT)))
        #expect(unlink(signed) == 0, "rm evicts (logged at info with its URL)")
        let log = { (try? String(contentsOfFile: mount.logPath, encoding: .utf8)) ?? "" }
        #expect(Poll.until { log().contains("evicted") && log().contains("fetch failed") }, "\(log())")
        #expect(log().contains("X-Api-Key: ***") && log().contains("Authorization: ***"), "\(log())")
        #expect(!log().contains("k-secret-value") && !log().contains("t0ken"), "header values are never logged")
        #expect(!log().contains("s3cr3t"), "query strings are shortened: \(log())")
        #expect(log().contains("/missing.png?…") && log().contains("/signed.png?…"), "\(log())")
        var status = stat()
        #expect(stat(mount.logPath, &status) == 0 && status.st_mode & 0o777 == 0o600, "the log file is 0600")
    }

    @Test("at debug level URLs are logged whole, header values still masked")
    func debugLevel() throws {
        try withMountedOrigin(["--header", "X-Api-Key: k-secret-value"]) { origin, mount in
            let gone = mount.path(origin.baseURL + "/gone.png?token=visible-at-debug")
            #expect(PosixFile.read(gone) == .failure(Errno(ENOENT)))
            #expect(mount.waitForLog { $0.contains("/gone.png?token=visible-at-debug") }, "\(mount.log)")
            #expect(mount.log.contains("X-Api-Key: ***") && !mount.log.contains("k-secret-value"))
        }
    }
}
