import Foundation
import Glibc
import ImgfsCore
import ImgfsTestSupport
import Testing

/// Issue 36, items 1 to 3, through real mounts and a real `redis-server`: what one member of a fleet (or anyone who
/// can write to its Redis) must not be able to do to the others.
@Suite("Fleet trust", .serialized, .enabled(if: FuseAvailability.available && RedisServer.available))
struct FleetTrustTests {
    /// A temporary directory for policy and key files, removed with the object.
    final class Scratch {
        let path = "/tmp/imgfs-fleet-\(getpid())-\(UUID().uuidString.prefix(8))"

        init() throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        /// Writes `text` to `name` (mode `mode`) and returns its path.
        func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let file = "\(path)/\(name)"
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
            return file
        }
    }

    @Test("a policy rule's deny: true refuses the image in memory, on disk and in Redis (EACCES, no origin GET)")
    func denyAppliesToEveryTier() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let scratch = try Scratch()
        let cache = CachingIntegrationTests.SharedCache()
        let icon = try Fixtures.smallPNGs(1)[0]
        let allow = try scratch.write("policy.yaml", "rules:\n  - host: \"*\"\n    deny: false\n")
        let deny = try scratch.write("deny.yaml", "rules:\n  - host: 127.0.0.1\n    deny: true\n")
        let origin = try TestOrigin()
        defer { origin.stop() }
        origin.route("/icon.png", .ok(icon, contentType: "image/png"))
        let url = origin.baseURL + "/icon.png"
        // Memory: the mount that fetched it, after its policy file says deny and is reloaded.
        let first = try SharedTierTests.member(redis, ["--policy-file", allow], cacheDirectory: cache.path)
        #expect(PosixFile.read(first.path(url)) == .success(icon))
        #expect(first.waitForStatistics { ($0["repository.shared_tier.published"] ?? 0) >= 1 })
        #expect(first.waitForStatistics { $0["repository.disk_entries"] == 1 })
        try FileManager.default.removeItem(atPath: allow)
        try FileManager.default.copyItem(atPath: deny, toPath: allow)
        let reload = try ChildProcess.run(MountedImgfs.binary, ["reload", first.mountPoint])
        #expect(reload.status == 0, "\(reload.output)")
        #expect(SharedTierTests.outcome(first.path(url), icon) == "\(Errno(EACCES))", "memory")
        first.stop()
        // Disk: a mount on the same cache directory; Redis: a mount with a cache of its own.
        for (name, directory) in [("disk", cache.path), ("Redis", nil as String?)] {
            let mount = try SharedTierTests.member(redis, ["--policy-file", deny], cacheDirectory: directory)
            defer { mount.stop() }
            #expect(SharedTierTests.outcome(mount.path(url), icon) == "\(Errno(EACCES))", "\(name)")
            let why = try ChildProcess.run(MountedImgfs.binary, ["why", "--mount", mount.mountPoint, url])
            #expect(why.output.contains("denied by the policy rule 127.0.0.1"), "\(name): \(why.output)")
            #expect(mount.statistics()["repository.shared_tier.hits"] ?? 0 == 0, "\(name)")
        }
        #expect(origin.requestCount("/icon.png") == 1, "refused without a request")
    }
}
