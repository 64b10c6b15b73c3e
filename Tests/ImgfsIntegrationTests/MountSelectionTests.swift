import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// Issue 39, item 2: without --mount a command uses the caller's one imgfs mount, asks for --mount naming the
/// caller's mounts when there are several, and never acts on a mount of another user.
@Suite("Mount selection", .serialized, .enabled(if: FuseAvailability.available))
struct MountSelectionTests {
    /// A URL whose name needs the digest form (`img/~<sha256>`), which must be registered with a mount.
    private let longURL = "http://127.0.0.1:9/" + String(repeating: "signed-", count: 700) + ".png"

    private func run(_ arguments: [String], asNobody: Bool = false) throws -> (status: Int32, output: String) {
        guard asNobody else { return try ChildProcess.run(MountedImgfs.binary, arguments) }
        return try ChildProcess.run(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", MountedImgfs.binary] + arguments)
    }

    /// Whether `mount` knows the long URL's digest name: an unknown one is ENOENT, a registered one resolves (and
    /// fails otherwise, since nothing listens on port 9).
    private func isRegistered(_ mount: MountedImgfs) -> Bool {
        guard let url = try? ImageURL(longURL) else { return false }
        var status = stat()
        return stat("\(mount.mountPoint)/img/\(ImagePath.digestName(for: url))", &status) == 0 || errno != ENOENT
    }

    @Test("with two mounts of the caller, path, why, stats, purge, reload and list ls ask for --mount, naming both")
    func severalMounts() throws {
        let first = try MountedImgfs()
        defer { first.stop() }
        let second = try MountedImgfs()
        defer { second.stop() }
        let commands = [
            ["path", longURL], ["why", "http://127.0.0.1:9/a.png"], ["stats"], ["purge"], ["reload"], ["list", "ls"]
        ]
        for arguments in commands {
            let result = try run(arguments)
            #expect(result.status != 0, "\(arguments): \(result.output)")
            #expect(
                result.output.contains("--mount") && result.output.contains(first.mountPoint)
                    && result.output.contains(second.mountPoint),
                "\(arguments): \(result.output)")
        }
        #expect(!isRegistered(first) && !isRegistered(second), "no mount learnt the URL")
        #expect(first.isMounted && second.isMounted)
        let chosen = try run(["path", "--mount", second.mountPoint, longURL])
        #expect(chosen.status == 0, "\(chosen.output)")
        #expect(!isRegistered(first) && isRegistered(second), "only the chosen mount")
        #expect(try run(["stats", "--mount", first.mountPoint]).status == 0)
    }

    @Test("a mount of another user (root's, with allow_other) is never used by nobody's commands without --mount")
    func anotherUsersMount() throws {
        let mount = try MountedImgfs(arguments: ["-o", "allow_other"])
        defer { mount.stop() }
        for arguments in [["path", longURL], ["why", "http://127.0.0.1:9/a.png"], ["stats"], ["list", "ls"]] {
            let result = try run(arguments, asNobody: true)
            #expect(result.status != 0, "\(arguments): \(result.output)")
            #expect(result.output.contains("no imgfs mount of yours"), "\(arguments): \(result.output)")
            #expect(!result.output.contains(mount.mountPoint), "another user's mount is not named: \(result.output)")
        }
        #expect(!isRegistered(mount), "nobody's imgfs path did not register with root's mount")
        // Named explicitly, it is used: its statistics are then refused, being its owner's.
        let explicit = try run(["stats", "--mount", mount.mountPoint], asNobody: true)
        #expect(explicit.status != 0 && explicit.output.contains("Permission denied"), "\(explicit)")
        let registered = try run(["path", "--mount", mount.mountPoint, longURL], asNobody: true)
        #expect(registered.status == 0, "nobody can register with it when asked to: \(registered.output)")
        #expect(isRegistered(mount))
    }

    @Test("with exactly one mount of the caller, commands without --mount use it")
    func oneMount() throws {
        let mount = try MountedImgfs()
        defer { mount.stop() }
        // Other tests (or other users) may have imgfs mounts now: run in a mount namespace of our own where only
        // this one is left (the others are detached there alone; the daemon still serves ours).
        let script = """
            awk '$0 ~ / - fuse.imgfs / && $5 != "\(mount.mountPoint)" {print $5}' /proc/self/mountinfo \
              | while read -r other; do umount -l "$other"; done
            '\(MountedImgfs.binary)' path '\(longURL)' && '\(MountedImgfs.binary)' stats
            """
        let result = try ChildProcess.run(
            "/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.hasPrefix("img/~"), "\(result.output)")
        #expect(isRegistered(mount), "the URL was registered with the one mount")
        #expect(mount.isMounted)
    }
}
