import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 36, item 6: `imgfs mount --cache-dir D` refuses a D that another user owns or may write to, and never
/// follows a symbolic link planted in it (the root daemon once appended its log to a root-only file that way).
@Suite("Cache directory trust", .serialized, .enabled(if: FuseAvailability.available))
struct CacheDirectoryTrustTests {
    /// Runs `imgfs mount` (background, as users do) on a fresh mount point with the cache directory `prepare` makes,
    /// then `inspect` (the mount, if one came up, is unmounted first); returns the command's exit status and output.
    /// Everything is removed afterwards.
    private func mount(
        _ prepare: (_ cache: String, _ root: String) throws -> Void,
        inspect: (_ cache: String, _ root: String) -> Void = { _, _ in }
    ) throws -> (status: Int32, output: String) {
        let root = "/tmp/imgfs-test-\(getpid())-trust-\(UUID().uuidString.prefix(8))"
        let mountPoint = "\(root)/mnt", cache = "\(root)/cache"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        defer {
            let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
            if table.contains(" \(mountPoint) ") {
                _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", "-z", mountPoint], timeout: 10)
            }
            try? FileManager.default.removeItem(atPath: root)
        }
        try prepare(cache, root)
        let result = try ChildProcess.run(
            MountedImgfs.binary, ["mount", mountPoint, "--cache-dir", cache], timeout: 30)
        if result.status == 0 { _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", mountPoint], timeout: 10) }
        inspect(cache, root)
        return result
    }

    @Test("a world-writable cache directory is refused with the reason; so is one owned by nobody")
    func notTheDaemons() throws {
        let writable = try mount { cache, _ in chmod(cache, 0o777) }
        #expect(writable.status != 0, "\(writable.output)")
        #expect(writable.output.contains("is writable by every user"), "\(writable.output)")
        let foreign = try mount { cache, _ in chown(cache, 65534, 65534) }
        #expect(foreign.status != 0, "\(foreign.output)")
        #expect(foreign.output.contains("belongs to user 65534"), "\(foreign.output)")
    }

    @Test("imgfs.log planted as a symbolic link to a root-only file: refused, the file untouched")
    func plantedLog() throws {
        var victimText: String?
        let result = try mount { cache, root in
            FileManager.default.createFile(atPath: "\(root)/victim", contents: Data("root only\n".utf8))
            chmod("\(root)/victim", 0o600)
            #expect(symlink("\(root)/victim", "\(cache)/imgfs.log") == 0)
        } inspect: { _, root in
            victimText = try? String(contentsOfFile: "\(root)/victim", encoding: .utf8)
        }
        #expect(result.status != 0, "\(result.output)")
        #expect(result.output.contains("imgfs.log is a symbolic link"), "\(result.output)")
        #expect(victimText == "root only\n", "the daemon appended nothing to the file the link points to")
    }

    @Test("v1 and lists planted as symbolic links to another directory: refused, nothing written there")
    func plantedFolders() throws {
        for folder in ["v1", "lists"] {
            var written: [String]?
            let result = try mount { cache, root in
                try FileManager.default.createDirectory(atPath: "\(root)/elsewhere", withIntermediateDirectories: false)
                #expect(symlink("\(root)/elsewhere", "\(cache)/\(folder)") == 0)
            } inspect: { _, root in
                written = try? FileManager.default.contentsOfDirectory(atPath: "\(root)/elsewhere")
            }
            #expect(result.status != 0, "\(folder): \(result.output)")
            #expect(result.output.contains("\(folder) is a symbolic link"), "\(folder): \(result.output)")
            #expect(written == [], "\(folder): \(written ?? [])")
        }
    }
}
