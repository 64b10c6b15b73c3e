import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 36, items 4 and 5: on a mount shared with `-o allow_other`, another user (`nobody`) opens and reads images by
/// name, but cannot list what is cached (`img/`, `hosts/`, `lists/`), read the statistics, evict or purge: EACCES.
/// The mount's owner (root here, who runs the daemon) still can.
@Suite("A mount shared with other users", .serialized, .enabled(if: FuseAvailability.available))
struct SharedMountTests {
    /// Runs `command` as nobody; returns its exit status and output.
    private func asNobody(_ command: [String]) throws -> (status: Int32, output: String) {
        try ChildProcess.run("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups"] + command)
    }

    private func listing(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    @Test("nobody reads an image by name; listing, statistics, rm, purge and imgfs purge are refused with EACCES")
    func otherUser() throws {
        let origin = try NamespaceOrigin()
        defer { origin.stop() }
        let image = try Fixtures.smallPNGs(1)[0]
        try origin.serve("a.png", image)
        let mount = try MountedImgfs(arguments: ["-o", "allow_other"], launcher: origin.launcher)
        defer { mount.stop() }
        let url = origin.baseURL + "/a.png?token=s3cr3t"
        let name = NameCodec.encode(url)
        let file = mount.path(url)
        #expect(PosixFile.read(file) == .success(image), "\(mount.log)")
        #expect(listing("\(mount.mountPoint)/img") == [name])

        let read = try asNobody(["/usr/bin/cmp", file, "\(origin.directory)/a.png"])
        #expect(read.status == 0, "nobody reads the image by its name: \(read.output)")
        for directory in ["img", "hosts", "lists", "hosts/\(NamespaceOrigin.address):8080", "thumb/256"] {
            let ls = try asNobody(["/bin/ls", "\(mount.mountPoint)/\(directory)"])
            #expect(ls.status != 0 && ls.output.contains("Permission denied"), "ls \(directory): \(ls.output)")
            #expect(!ls.output.contains("s3cr3t"))
        }
        for generated in ["stats.json", "metrics"] {
            let cat = try asNobody(["/bin/cat", "\(mount.mountPoint)/.imgfs/\(generated)"])
            #expect(cat.status != 0 && cat.output.contains("Permission denied"), "\(generated): \(cat.output)")
        }
        let rm = try asNobody(["/bin/rm", "-f", file])
        #expect(rm.status != 0 && rm.output.contains("Permission denied"), "rm: \(rm.output)")
        let purge = try asNobody([
            "/usr/bin/setfattr", "-n", "user.imgfs.purge", "-v", "disk", "\(mount.mountPoint)/.imgfs"
        ])
        #expect(purge.status != 0 && purge.output.contains("Permission denied"), "setfattr: \(purge.output)")
        let command = try asNobody([MountedImgfs.binary, "purge", "--disk", "--mount", mount.mountPoint])
        #expect(command.status != 0 && command.output.contains("Permission denied"), "imgfs purge: \(command.output)")
        let list = "\(origin.directory)/list.txt"
        try (url + "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let add = try asNobody([MountedImgfs.binary, "list", "add", mount.mountPoint, "mine", list])
        #expect(add.status != 0 && add.output.contains("Permission denied"), "imgfs list add: \(add.output)")
        #expect(listing("\(mount.mountPoint)/lists").isEmpty, "no list was added")
        #expect(listing("\(mount.mountPoint)/img") == [name], "the image is still cached")
        #expect(mount.statistics()["repository.memory_entries"] == 1, "nothing was purged")

        // The owner (root) still lists, evicts and purges.
        #expect(unlink(file) == 0)
        #expect(listing("\(mount.mountPoint)/img").isEmpty)
        #expect(try ChildProcess.run(MountedImgfs.binary, ["purge", "--disk", "--mount", mount.mountPoint]).status == 0)
        var status = stat()
        #expect(stat("\(mount.mountPoint)/img", &status) == 0 && status.st_mode & 0o7777 == 0o711)
    }
}
