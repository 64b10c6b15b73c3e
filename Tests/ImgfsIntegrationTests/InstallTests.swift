import Foundation
import Glibc
import ImgfsTestSupport
import Testing

/// Issue 39, item 4: a `--user` install says that mount(8) will not find it and prints the one command that makes
/// fstab work; run as printed, that command does.
@Suite("Install", .serialized, .enabled(if: FuseAvailability.available))
struct InstallTests {
    @Test("install --user ends with the command that makes mount -t fuse.imgfs work; before it: exit 127, after: 0")
    func userInstallNamesTheFstabCommand() throws {
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        let home = "\(scratch.root)/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let install = try HelperCommand.run(
            "\(MountHelperTests.scripts)/install", ["--user"],
            environment: ["HOME": home, "PATH": MountHelperTests.systemPath, "IMGFS_BINARY": MountedImgfs.binary])
        #expect(install.status == 0, "\(install.output)")
        let installed = "\(home)/.local/bin/imgfs"
        #expect(FileManager.default.isExecutableFile(atPath: installed))
        let lines = install.output.split(separator: "\n").map(String.init)
        #expect(
            lines.dropLast().last?.contains("/etc/fstab and `mount -t fuse.imgfs` do not use your PATH") == true,
            "\(install.output)")
        let command = lines.last?.trimmingCharacters(in: .whitespaces) ?? ""
        #expect(command == "sudo install -m 0755 \(installed) /usr/local/bin/imgfs", "\(install.output)")
        try #require(command.hasPrefix("sudo "))

        // In a mount namespace of the test's own, with an empty /usr/local/bin (the machine's is left alone): the
        // fstab-style mount fails as users saw it, then works once the printed command has run (as root, no sudo).
        let script = """
            trap 'umount -l "$MNT" 2>/dev/null' EXIT
            mount -t tmpfs none /usr/local/bin || exit 90
            mount -t fuse.imgfs none "$MNT" -o cache_dir="$CACHE"; echo "before=$?"
            \(command.dropFirst(5)) || exit 91
            mount -t fuse.imgfs none "$MNT" -o cache_dir="$CACHE"; echo "after=$?"
            sed -n 's/^ *"pid" : \\([0-9]*\\),*$/pid=\\1/p' "$MNT/.imgfs/stats.json"
            umount "$MNT"; echo "umount=$?"
            """
        let run = try HelperCommand.run(
            "/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script],
            environment: [
                "PATH": MountHelperTests.systemPath, "MNT": scratch.mountPoint, "CACHE": scratch.cacheDirectory
            ],
            timeout: 60)
        let pid = run.output.split(separator: "\n").first { $0.hasPrefix("pid=") }.flatMap { pid_t($0.dropFirst(4)) }
        if let pid, !Poll.until(timeout: 15, interval: 0.05, { kill(pid, 0) != 0 }) { kill(pid, SIGKILL) }
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("imgfs: not found") && run.output.contains("before=127"), "\(run.output)")
        #expect(run.output.contains("after=0") && run.output.contains("umount=0"), "\(run.output)")
        #expect(pid != nil, "the mount served its stats.json: \(run.output)")
    }
}
