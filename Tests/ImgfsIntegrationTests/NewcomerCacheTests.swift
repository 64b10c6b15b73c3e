import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 15, what a new user hit with the caches: expired copies kept for offline use, `--expire` applied to cached
/// entries, the address policy applied to cached entries, and one attempt per use with `--negative-ttl 0`.
@Suite("Newcomer: caches", .serialized, .enabled(if: FuseAvailability.available))
struct NewcomerCacheTests {
    private func sh(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 60)
    }

    /// Waits until `date` (these tests are about time passing, so there is no condition to poll instead).
    private func wait(until date: Date) {
        Poll.elapse(max(0, date.timeIntervalSinceNow))
    }

    @Test(
        "an image expired long ago is still served offline after a remount; purge --expired and --max-stale remove it"
    )
    func expiredCopiesStayOffline() throws {
        let cache = CachingIntegrationTests.SharedCache()
        let origin = try TestOrigin()
        let icon = try Fixtures.smallPNGs(1)[0]
        origin.route("/offline.png", .ok(icon, contentType: "image/png"))
        let url = origin.baseURL + "/offline.png"
        let first = try MountedImgfs(arguments: ["--expire", "3"], cacheDirectory: cache.path)
        let fetchedAt = Date()
        #expect(PosixFile.read(first.path(url)) == .success(icon))
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        first.stop()
        origin.stop()
        wait(until: fetchedAt + 7)
        let offline = try MountedImgfs(
            arguments: ["--expire", "3", "--policy", "cache-only"], cacheDirectory: cache.path)
        #expect(PosixFile.read(offline.path(url)) == .success(icon), "expired 4 s ago, served offline")
        #expect(!offline.log.contains("disk cache sweep removed"), "\(offline.log)")
        #expect(try sh("'\(MountedImgfs.binary)' purge --expired '\(offline.mountPoint)'").status == 0)
        #expect(offline.statistics()["repository.disk_entries"] == 0, "purge --expired removes it")
        offline.stop()
        // The optional age bound: expired longer than --max-stale ago is swept at start.
        let origin2 = try TestOrigin()
        defer { origin2.stop() }
        origin2.route("/bounded.png", .ok(icon, contentType: "image/png"))
        let second = try MountedImgfs(arguments: ["--expire", "1"], cacheDirectory: cache.path)
        let bounded = origin2.baseURL + "/bounded.png"
        #expect(PosixFile.read(second.path(bounded)) == .success(icon))
        #expect(second.waitForStatistics { $0["repository.disk_entries"] == 1 })
        second.stop()
        wait(until: Date() + 2.5)
        let third = try MountedImgfs(arguments: ["--expire", "1", "--max-stale", "1"], cacheDirectory: cache.path)
        defer { third.stop() }
        #expect(third.waitForStatistics { $0["repository.disk_entries"] == 0 }, "expired 1.5 s ago, bound 1 s")
        #expect(third.log.contains("disk cache sweep removed 1 expired entries"))
    }

    @Test("a remount with a shorter --expire applies it to images cached earlier: expires_at and revalidation")
    func currentExpireApplies() throws {
        let cache = CachingIntegrationTests.SharedCache()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        origin.route(prefix: "/tagged.jpg") { request in
            if request.header("If-None-Match") == "\"t1\"" {
                return OriginResponse(status: 304, headers: [("ETag", "\"t1\"")])
            }
            var response = OriginResponse.ok(image, contentType: "image/jpeg")
            response.headers.append(("ETag", "\"t1\""))
            return response
        }
        let url = origin.baseURL + "/tagged.jpg"
        let first = try MountedImgfs(arguments: ["--expire", "24h"], cacheDirectory: cache.path)
        let fetchedAt = Date()
        #expect(PosixFile.read(first.path(url)) == .success(image))
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        first.stop()
        let second = try MountedImgfs(arguments: ["--expire", "1"], cacheDirectory: cache.path)
        defer { second.stop() }
        let file = second.path(url)
        let value = try sh("getfattr --absolute-names --only-values -n user.imgfs.expires_at '\(file)'").output
        let expiresAt = try #require(ISO8601DateFormatter().date(from: value), "expires_at: \(value)")
        #expect(expiresAt < fetchedAt + 60, "expires_at is the fetch time + the current --expire: \(value)")
        wait(until: fetchedAt + 1.5)
        #expect(PosixFile.read(file) == .success(image))
        #expect(origin.requestCount("/tagged.jpg") == 2, "the copy older than the new --expire was revalidated")
        #expect(origin.requests().last?.header("If-None-Match") == "\"t1\"")
    }

    @Test(
        "after a remount with --deny-private-networks or --allow-host, an image cached from 127.0.0.1 is EACCES"
    )
    func policyAppliesToCachedImages() throws {
        let cache = CachingIntegrationTests.SharedCache()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let icon = try Fixtures.smallPNGs(1)[0]
        origin.route("/inside.png", .ok(icon, contentType: "image/png"))
        let url = origin.baseURL + "/inside.png"
        let first = try MountedImgfs(cacheDirectory: cache.path)
        #expect(PosixFile.read(first.path(url)) == .success(icon))
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        first.stop()
        for (arguments, reason) in [
            (["--deny-private-networks"], "127.0.0.1 is loopback"),
            (["--allow-host", "images.example.com"], "127.0.0.1 is not an allowed host")
        ] {
            let mount = try MountedImgfs(arguments: arguments, cacheDirectory: cache.path)
            #expect(PosixFile.read(mount.path(url)) == .failure(Errno(EACCES)), "\(arguments)")
            #expect(PosixFile.size(mount.path(url)) == .failure(Errno(EACCES)), "\(arguments)")
            let why = try sh("'\(MountedImgfs.binary)' why --mount '\(mount.mountPoint)' '\(url)'")
            #expect(why.output.contains(reason), "\(arguments): \(why.output)")
            mount.stop()
        }
        #expect(origin.requestCount("/inside.png") == 1, "refused without a request")
        let allowed = try MountedImgfs(cacheDirectory: cache.path)
        defer { allowed.stop() }
        #expect(
            PosixFile.read(allowed.path(url)) == .success(icon), "the copy is still there for a mount that allows it")
    }

    @Test("a cached image of a host name is refused by --deny-private-networks when it came from a private address")
    func connectedAddressIsRemembered() throws {
        let cache = CachingIntegrationTests.SharedCache()
        let proxy = try TestOrigin()
        defer { proxy.stop() }
        let icon = try Fixtures.smallPNGs(1)[0]
        // Through a proxy on 127.0.0.1 the name never resolves: the connection (to the proxy) is to 127.0.0.1.
        let url = "http://img.invalid/named.png"
        proxy.route(url, .ok(icon, contentType: "image/png"))
        var environment = ProcessInfo.processInfo.environment
        environment["http_proxy"] = proxy.baseURL
        let first = try MountedImgfs(cacheDirectory: cache.path, environment: environment)
        #expect(PosixFile.read(first.path(url)) == .success(icon))
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        first.stop()
        environment["http_proxy"] = nil
        let denied = try MountedImgfs(
            arguments: ["--deny-private-networks"], cacheDirectory: cache.path,
            environment: environment)
        defer { denied.stop() }
        #expect(PosixFile.read(denied.path(url)) == .failure(Errno(EACCES)))
        let why = try sh("'\(MountedImgfs.binary)' why --mount '\(denied.mountPoint)' '\(url)'")
        #expect(why.output.contains("127.0.0.1 is loopback"), "\(why.output)")
        #expect(proxy.totalRequests == 1)
    }

    @Test("--negative-ttl 0: a hanging URL costs one stall-timeout per use, not two")
    func retryFailedTriesOncePerUse() throws {
        try withMountedOrigin(["--negative-ttl", "0", "--tune", "stall-timeout=2"]) { origin, mount in
            origin.route("/hang.png", OriginResponse(status: 200, body: [1, 2, 3], headerDelay: 60))
            let start = Date()
            let result = try sh("cat '\(mount.path(origin.baseURL + "/hang.png"))' > /dev/null")
            let seconds = Date().timeIntervalSince(start)
            #expect(result.status != 0)
            #expect(origin.requestCount("/hang.png") == 1, "one attempt")
            #expect(seconds < 3.8, "took \(seconds) s at --tune stall-timeout=2")
        }
    }
}
