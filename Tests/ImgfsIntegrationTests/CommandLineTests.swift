import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 5: the command line — purge kinds, `imgfs path` from stdin and with --ext, and mount-point errors.
@Suite("Command line", .serialized, .enabled(if: FuseAvailability.available))
struct CommandLineTests {
    private func sh(_ command: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/bin/sh", ["-c", command], timeout: 60)
    }

    @Test("imgfs purge empties the memory cache, both caches (--disk) or the expired images (--expired)")
    func purge() throws {
        let icons = try Fixtures.smallPNGs(3)
        try withMountedOrigin(["--expire", "2s"]) { origin, mount throws in
            for (index, icon) in icons.enumerated() {
                origin.route("/\(index).png", .ok(icon, contentType: "image/png"))
            }
            let binary = MountedImgfs.binary
            for index in 0..<2 {
                #expect(PosixFile.read(mount.path("\(origin.baseURL)/\(index).png")) == .success(icons[index]))
            }
            #expect(
                mount.waitForStatistics { $0["repository.disk_entries"] == 2 && $0["repository.memory_entries"] == 2 })
            #expect(try sh("'\(binary)' purge '\(mount.mountPoint)'").status == 0)
            #expect(mount.statistics()["repository.memory_entries"] == 0)
            #expect(mount.statistics()["repository.disk_entries"] == 2)
            Poll.elapse(2.2)  // past the expiry
            #expect(PosixFile.read(mount.path("\(origin.baseURL)/2.png")) == .success(icons[2]))
            #expect(mount.waitForStatistics { $0["repository.disk_entries"] == 3 })
            #expect(try sh("'\(binary)' purge --expired '\(mount.mountPoint)'").status == 0)
            #expect(
                mount.statistics()["repository.disk_entries"] == 1, "only the image fetched in the last 2 s is left")
            #expect(try sh("'\(binary)' purge --disk '\(mount.mountPoint)'").status == 0)
            #expect(
                mount.statistics()["repository.disk_entries"] == 0
                    && mount.statistics()["repository.memory_entries"] == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: mount.mountPoint + "/img").isEmpty)
            #expect(try sh("setfattr -n user.imgfs.purge -v everything '\(mount.mountPoint)/.imgfs'").status != 0)
            #expect(
                try sh("setfattr -n user.imgfs.other -v 1 '\(mount.mountPoint)/img'").output.contains(
                    "Read-only file system"))
        }
    }

    @Test("imgfs path reads URLs from stdin, and --ext adds #.<ext> from the cached content type")
    func path() throws {
        let icon = try Fixtures.smallPNGs(1)[0]
        try withMountedOrigin { origin, mount in
            origin.route("/avatar?id=7", .ok(icon, contentType: "image/png"))
            let binary = MountedImgfs.binary
            let urls = ["\(origin.baseURL)/a.png", "# a comment", "", "\(origin.baseURL)/b.jpg?x=1"]
            let piped = try sh("printf '%s\\n' \(urls.map { "'\($0)'" }.joined(separator: " ")) | '\(binary)' path")
            #expect(piped.status == 0)
            #expect(piped.output == "img/\(NameCodec.encode(urls[0]))\nimg/\(NameCodec.encode(urls[3]))\n")
            let avatar = "\(origin.baseURL)/avatar?id=7"
            #expect(PosixFile.read(mount.path(avatar)) == .success(icon))
            let withExtension = try sh(
                "'\(binary)' path --ext --mount '\(mount.mountPoint)' '\(avatar)' '\(origin.baseURL)/c.png'")
            #expect(
                withExtension.output == "\(mount.path(avatar + "#.png"))\n\(mount.path(origin.baseURL + "/c.png"))\n")
            let named = withExtension.output.split(separator: "\n").first.map(String.init) ?? ""
            #expect(named.hasSuffix("%23.png"))
            #expect(PosixFile.read(named) == .success(icon))
            #expect(origin.requestCount("/avatar?id=7") == 1, "the #.png name is the same download")
            #expect(try sh("file -b '\(named)'").output.hasPrefix("PNG image data"))
        }
    }

    @Test("imgfs version prints what imgfs --version prints")
    func version() throws {
        let subcommand = try ChildProcess.run(MountedImgfs.binary, ["version"])
        let flag = try ChildProcess.run(MountedImgfs.binary, ["--version"])
        #expect(subcommand.status == 0 && flag.status == 0, "\(subcommand.output)")
        #expect(subcommand.output == flag.output && !flag.output.isEmpty, "\(subcommand.output) vs \(flag.output)")
    }

    @Test("mounting on a directory that is not empty is refused in one line, unless -o nonempty")
    func nonEmptyMountPoint() throws {
        let directory = "/tmp/imgfs-nonempty-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", directory])
            try? FileManager.default.removeItem(atPath: directory)
        }
        _ = FileManager.default.createFile(atPath: directory + "/keep.txt", contents: Data("x".utf8))
        let refused = try sh("'\(MountedImgfs.binary)' mount '\(directory)' --cache-dir '\(directory)-cache' 2>&1")
        defer { try? FileManager.default.removeItem(atPath: directory + "-cache") }
        #expect(refused.status != 0)
        #expect(
            refused.output.contains("is not empty") && refused.output.split(separator: "\n").count == 1,
            "\(refused.output)")
        let accepted = try sh(
            "'\(MountedImgfs.binary)' mount '\(directory)' -o nonempty --cache-dir '\(directory)-cache'")
        #expect(accepted.status == 0, "\(accepted.output)")
        let pid =
            (try? JSONSerialization.jsonObject(
                with: FileManager.default.contents(atPath: directory + "/.imgfs/stats.json") ?? Data())
            as? [String: Any])?["pid"] as? Int
        #expect(try sh("fusermount3 -u '\(directory)'").status == 0)
        if let pid {
            Poll.until(timeout: 5, interval: 0.05) { kill(pid_t(pid), 0) != 0 }
            #expect(kill(pid_t(pid), 0) != 0, "the daemon exited")
            if kill(pid_t(pid), 0) == 0 { kill(pid_t(pid), SIGKILL) }
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/keep.txt"))
    }
}
