import Foundation
import Glibc
import ImgfsModel
import ImgfsTestSupport
import Testing

/// The ways of mounting imgfs that docs/MOUNTING.md describes, with the built binary's directory first on PATH:
/// mount.fuse3 (what `mount -t fuse.imgfs` and /etc/fstab run), `imgfs mount` in the background, its errors, and
/// the systemd unit files (checked by `systemd-analyze verify`, and their command lines run as systemd would run
/// them, within the system unit's capability bounding set and no_new_privs).
@Suite("Mount helpers", .serialized, .enabled(if: FuseAvailability.available))
struct MountHelperTests {
    static let mountFuse3 = "/sbin/mount.fuse3"
    static let systemdAnalyze = "/usr/bin/systemd-analyze"
    static let units = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("mount-scripts/systemd").path
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("mount-scripts").path
    /// The PATH systemd gives services (and mount(8) gives mount helpers).
    static let systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    private func requireMountFuse3() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.mountFuse3),
            "\(Self.mountFuse3) is missing: apt-get install fuse3 (mount-scripts/test installs it)")
    }

    @Test(
        "mount.fuse3 none DIR -t imgfs -o cache_dir=…,memory_limit=32M,noauto,_netdev mounts, reads; umount ends it"
    )
    func mountThroughMountFuse3() throws {
        try requireMountFuse3()
        let origin = try TestOrigin()
        defer { origin.stop() }
        let image = try Fixtures.mediumJPEG()
        origin.route("/photo.jpg", .ok(image, contentType: "image/jpeg"))
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }

        let mount = try HelperCommand.run(
            Self.mountFuse3,
            [
                "none", scratch.mountPoint, "-t", "imgfs",
                "-o", "cache_dir=\(scratch.cacheDirectory),memory_limit=32M,noauto,_netdev"
            ], environment: HelperCommand.environmentWithBinaryOnPath)
        try #require(mount.status == 0, "mount.fuse3 failed: \(mount.output)")
        #expect(scratch.isMounted, "the mount is fuse.imgfs in /proc/self/mountinfo")
        let pid = try #require(scratch.daemonPID(), "stats.json names the daemon's pid")
        #expect(scratch.memoryBudget() == 33_554_432, "memory_limit=32M reached the daemon")
        #expect(FileManager.default.fileExists(atPath: "\(scratch.cacheDirectory)/imgfs.log"), "cache_dir=… was used")
        #expect(
            PosixFile.read("\(scratch.mountPoint)/img/\(NameCodec.encode(origin.baseURL + "/photo.jpg"))")
                == .success(image))

        let unmount = try ChildProcess.run("/bin/umount", [scratch.mountPoint], timeout: 30)
        #expect(unmount.status == 0, "umount: \(unmount.output)")
        #expect(!scratch.isMounted)
        #expect(
            Poll.until(timeout: 15, interval: 0.02) { !ScratchMount.isAlive(pid) },
            "the daemon (pid \(pid)) exits after umount")
    }

    @Test(
        "fstab options defaults, _netdev, noauto, nofail, x-systemd.*, comment=… are dropped, the rest accepted"
    )
    func fstabOptions() throws {
        try requireMountFuse3()
        let fstabOnly =
            "defaults,_netdev,noauto,nofail,x-systemd.automount,x-systemd.mount-timeout=30,"
            + "x-systemd.requires=network-online.target,comment=systemd.automount"
        // Through mount.fuse3 (which drops some of them itself) and straight to imgfs in the form mount.fuse3 uses.
        for viaMountFuse3 in [true, false] {
            let scratch = try ScratchMount()
            defer { scratch.cleanUp() }
            let options = "\(fstabOnly),allow_other,memory_limit=48M,cache_dir=\(scratch.cacheDirectory),expire=2h"
            let mount =
                viaMountFuse3
                ? try HelperCommand.run(
                    Self.mountFuse3, ["none", scratch.mountPoint, "-t", "imgfs", "-o", options],
                    environment: HelperCommand.environmentWithBinaryOnPath)
                : try HelperCommand.run(
                    MountedImgfs.binary, ["none", scratch.mountPoint, "-o", options],
                    environment: HelperCommand.environmentWithBinaryOnPath)
            let how = viaMountFuse3 ? "mount.fuse3" : "imgfs none DIR -o …"
            try #require(mount.status == 0, "\(how): \(mount.output)")
            _ = scratch.daemonPID()
            #expect(scratch.memoryBudget() == 48 << 20, "\(how): memory_limit=48M")
            #expect(
                scratch.superOptions?.split(separator: ",").contains("allow_other") == true,
                "\(how): allow_other reached FUSE: \(scratch.superOptions ?? "not mounted")")
            let unmount = try ChildProcess.run("/bin/umount", [scratch.mountPoint], timeout: 30)
            #expect(unmount.status == 0, "\(how): umount: \(unmount.output)")
        }
    }

    @Test("imgfs mount returns 0 only once the mount is ready, and says where it logs; imgfs-unmount unmounts it")
    func backgroundMount() throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let icon = try Fixtures.smallPNGs(1)[0]
        origin.route("/icon.png", .ok(icon, contentType: "image/png"))
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        let environment = HelperCommand.environmentWithBinaryOnPath

        let mount = try HelperCommand.run(
            "imgfs", ["mount", scratch.mountPoint, "--cache-dir", scratch.cacheDirectory],
            environment: environment)
        // Checked before anything else can wait: the command's return alone must mean "ready".
        let mountedOnReturn = scratch.isMounted
        let statisticsOnReturn = FileManager.default.fileExists(atPath: "\(scratch.mountPoint)/.imgfs/stats.json")
        #expect(mount.status == 0, "imgfs mount: \(mount.output)")
        #expect(mountedOnReturn && statisticsOnReturn, "mounted and serving when imgfs mount returned")
        let log = "\(scratch.cacheDirectory)/imgfs.log"
        #expect(HelperCommand.lines(mount.output) == ["imgfs: mounted on \(scratch.mountPoint) (log: \(log))"])
        let pid = try #require(scratch.daemonPID())
        #expect(ScratchMount.isAlive(pid))
        #expect(
            PosixFile.read("\(scratch.mountPoint)/img/\(NameCodec.encode(origin.baseURL + "/icon.png"))")
                == .success(icon))
        #expect(
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("mounted on \(scratch.mountPoint)"),
            "the daemon logs to the file it named")

        let unmount = try HelperCommand.run(
            "/bin/bash", ["\(Self.scripts)/imgfs-unmount", scratch.mountPoint],
            environment: environment)
        #expect(unmount.status == 0, "imgfs-unmount: \(unmount.output)")
        #expect(!scratch.isMounted)
        #expect(
            Poll.until(timeout: 15, interval: 0.02) { !ScratchMount.isAlive(pid) },
            "the daemon exits after imgfs-unmount")

        // --log-file moves the log, and the message says so.
        let custom = "\(scratch.root)/custom.log"
        let again = try HelperCommand.run(
            "imgfs",
            [
                "mount", scratch.mountPoint, "--cache-dir", scratch.cacheDirectory,
                "--log-file", custom
            ], environment: environment)
        #expect(again.status == 0 && scratch.isMounted, "imgfs mount --log-file: \(again.output)")
        #expect(HelperCommand.lines(again.output) == ["imgfs: mounted on \(scratch.mountPoint) (log: \(custom))"])
        _ = scratch.daemonPID()
        #expect(FileManager.default.fileExists(atPath: custom))
    }

    @Test(
        "a missing mount point, a file, a mounted one and a dead mount each fail with one clear line, exit non-zero"
    )
    func mountErrors() throws {
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        let environment = HelperCommand.environmentWithBinaryOnPath
        func failure(_ mountPoint: String, _ extra: [String] = []) throws -> (status: Int32, lines: [Substring]) {
            let result = try HelperCommand.run(
                "imgfs", ["mount", mountPoint, "--cache-dir", scratch.cacheDirectory] + extra,
                environment: environment, timeout: 30)
            return (result.status, HelperCommand.lines(result.output))
        }

        let missing = try failure("\(scratch.root)/missing")
        #expect(missing.status != 0)
        #expect(missing.lines == ["Error: mount point \(scratch.root)/missing does not exist"])

        let file = "\(scratch.root)/a-file"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let notDirectory = try failure(file)
        #expect(notDirectory.status != 0)
        #expect(notDirectory.lines == ["Error: mount point \(file) is not a directory"])

        let first = try HelperCommand.run(
            "imgfs", ["mount", scratch.mountPoint, "--cache-dir", scratch.cacheDirectory],
            environment: environment)
        try #require(first.status == 0, "the first mount: \(first.output)")
        let pid = try #require(scratch.daemonPID())
        for extra in [[], ["--foreground"]] {
            let twice = try failure(scratch.mountPoint, extra)
            #expect(twice.status != 0, "a second mount \(extra) on a mounted directory fails")
            #expect(
                twice.lines.count == 1
                    && twice.lines[0].hasPrefix("Error: mount point \(scratch.mountPoint) is already an imgfs mount"),
                "\(twice.lines)")
            #expect(scratch.mountCount == 1, "no mount stacked on the first one")
        }

        // A daemon killed with its mount in place leaves a dead mount ("Transport endpoint is not connected").
        kill(pid, SIGKILL)
        #expect(Poll.until(timeout: 10, interval: 0.02) { !ScratchMount.isAlive(pid) && scratch.isDead })
        let dead = try failure(scratch.mountPoint)
        #expect(dead.status != 0)
        #expect(
            dead.lines.count == 1
                && dead.lines[0].hasPrefix("Error: mount point \(scratch.mountPoint) is a dead FUSE mount")
                && dead.lines[0].contains("fusermount3 -u"), "\(dead.lines)")
    }

    @Test("systemd-analyze verify accepts the unit files, with the binary's path in them")
    func unitFilesVerify() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.systemdAnalyze),
            "\(Self.systemdAnalyze) is missing: apt-get install systemd (mount-scripts/test installs it)")
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        let directory = "\(scratch.root)/units"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let runtime = "\(scratch.root)/runtime"
        try FileManager.default.createDirectory(
            atPath: runtime, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        // Templates are verified as instances; a .mount unit must be named after its Where=.
        let cases: [(template: String, instance: String, user: Bool)] = [
            ("imgfs@.service", "imgfs@mnt-img.service", false),
            ("imgfs-user@.service", "imgfs-user@img.service", true),
            ("mnt-img.mount", "mnt-img.mount", false)
        ]
        for (template, instance, user) in cases {
            let text = try String(contentsOfFile: "\(Self.units)/\(template)", encoding: .utf8)
            #expect(
                text.contains("/usr/local/bin/imgfs") || template.hasSuffix(".mount"),
                "\(template) names /usr/local/bin/imgfs")
            try text.replacingOccurrences(of: "/usr/local/bin/imgfs", with: MountedImgfs.binary)
                .write(toFile: "\(directory)/\(instance)", atomically: true, encoding: .utf8)
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_RUNTIME_DIR"] = runtime
            environment["SYSTEMD_LOG_LEVEL"] = "notice"
            let verify = try HelperCommand.run(
                Self.systemdAnalyze, (user ? ["--user"] : []) + ["verify", "\(directory)/\(instance)"],
                environment: environment)
            #expect(verify.status == 0, "\(template): \(verify.output)")
            // verify exits 0 on unknown keys and bad values, but prints them.
            #expect(HelperCommand.lines(verify.output).isEmpty, "\(template): \(verify.output)")
        }
    }

    @Test(
        "the system unit's commands, run as systemd would, mount, wait, recover a dead mount and unmount"
    )
    func systemUnitCommands() throws {
        let unit = try SystemdUnit(path: "\(Self.units)/imgfs@.service")
        #expect(unit.values("Type") == ["simple"])
        #expect(unit.values("Restart") == ["on-failure"])
        #expect(unit.values("CapabilityBoundingSet") == ["CAP_SYS_ADMIN"])
        #expect(unit.values("NoNewPrivileges") == ["yes"])
        #expect(unit.values("DeviceAllow") == ["/dev/fuse rw"])
        let namespacing = [
            "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectKernelTunables",
            "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset",
            "ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "TemporaryFileSystem", "BindPaths",
            "BindReadOnlyPaths", "PrivateUsers", "MountFlags", "RootDirectory", "DynamicUser"
        ]
        for key in namespacing {
            #expect(unit.values(key).isEmpty, "\(key)= would hide the mount in the service's own mount namespace")
        }

        let origin = try TestOrigin()
        defer { origin.stop() }
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        let instance = try HelperCommand.run(
            "/usr/bin/systemd-escape", ["--path", scratch.mountPoint],
            environment: ProcessInfo.processInfo.environment)
        try #require(instance.status == 0, "systemd-escape: \(instance.output)")
        // A drop-in's IMGFS_OPTIONS: a later --cache-dir wins over the unit's /var/cache one.
        var environment = unit.environment
        #expect(environment["IMGFS_OPTIONS"] == "")
        environment["IMGFS_OPTIONS"] = "--cache-dir \(scratch.cacheDirectory) --memory-limit 40M"
        let specifiers: [Character: String] = [
            "f": scratch.mountPoint,
            "i": instance.output.trimmingCharacters(in: .whitespacesAndNewlines)
        ]
        let pre = try unit.commands("ExecStartPre", specifiers: specifiers, environment: environment)
        let start = try #require(try unit.commands("ExecStart", specifiers: specifiers, environment: environment).first)
        let post = try unit.commands("ExecStartPost", specifiers: specifiers, environment: environment)
        let stop = try unit.commands("ExecStop", specifiers: specifiers, environment: environment)
        #expect(start.arguments.first == "/usr/local/bin/imgfs")
        #expect(
            Array(start.arguments.dropFirst().prefix(5)) == [
                "mount", scratch.mountPoint, "--foreground", "-o", "allow_other"
            ])

        let sandbox = ["--no-new-privs", "--bounding-set", "-all,+sys_admin", "--inh-caps", "-all", "--"]
        let serviceEnvironment = ["PATH": Self.systemPath]
        func runControl(_ commands: [SystemdUnit.Command], _ what: String) throws {
            for command in commands {
                let result = try HelperCommand.run(
                    "/usr/bin/setpriv", sandbox + command.arguments,
                    environment: serviceEnvironment, timeout: 30)
                #expect(result.status == 0 || command.ignoresFailure, "\(what) \(command.arguments): \(result.output)")
            }
        }
        func startDaemon() throws -> ChildProcess {
            try runControl(pre, "ExecStartPre")
            let arguments = [MountedImgfs.binary] + start.arguments.dropFirst()
            let daemon = try ChildProcess.spawn(
                "/usr/bin/setpriv", sandbox + arguments, environment: serviceEnvironment,
                outputPath: "\(scratch.root)/journal.log")
            try runControl(post, "ExecStartPost")
            return daemon
        }

        let daemon = try startDaemon()
        defer { daemon.kill9AndReap() }
        try #require(scratch.isMounted, "mounted once ExecStartPost returned; journal:\n\(journal(scratch))")
        _ = scratch.daemonPID()
        #expect(scratch.superOptions?.split(separator: ",").contains("allow_other") == true)
        #expect(scratch.memoryBudget() == 40 << 20, "IMGFS_OPTIONS reached the daemon")
        let status = try String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8)
        #expect(status.contains("CapBnd:\t0000000000200000"), "the daemon runs with CAP_SYS_ADMIN only")
        #expect(status.contains("NoNewPrivs:\t1"))
        // allow_other turns --deny-private-networks on: the loopback origin is refused, as the unit intends.
        origin.route("/icon.png", .ok(try Fixtures.smallPNGs(1)[0], contentType: "image/png"))
        #expect(
            PosixFile.read("\(scratch.mountPoint)/img/\(NameCodec.encode(origin.baseURL + "/icon.png"))")
                == .failure(Errno(EACCES)))

        // Restart=on-failure after a crash: ExecStartPre detaches the dead mount and the next start mounts again.
        daemon.kill9AndReap()
        #expect(scratch.isDead, "a dead mount is left behind")
        let restarted = try startDaemon()
        defer { restarted.kill9AndReap() }
        #expect(scratch.mountCount == 1, "one live mount after the restart; journal:\n\(journal(scratch))")
        #expect(scratch.memoryBudget() == 40 << 20)
        _ = scratch.daemonPID()

        try runControl(stop, "ExecStop")
        #expect(restarted.wait(timeout: 15) == 0, "the daemon exits 0 after ExecStop; journal:\n\(journal(scratch))")
        #expect(!scratch.isMounted)
    }

    @Test("the user unit's commands mount under the home directory without allow_other, cache in %C, and unmount")
    func userUnitCommands() throws {
        let unit = try SystemdUnit(path: "\(Self.units)/imgfs-user@.service")
        #expect(unit.values("NoNewPrivileges").isEmpty, "NoNewPrivileges= would disarm the setuid fusermount3")
        #expect(unit.values("SystemCallFilter").isEmpty, "in a user manager SystemCallFilter= implies NoNewPrivileges=")
        let scratch = try ScratchMount()
        defer { scratch.cleanUp() }
        // %h is the scratch root and the instance "mnt" is the mount point relative to it.
        let specifiers: [Character: String] = [
            "h": scratch.root, "f": "/mnt", "i": "mnt", "C": "\(scratch.root)/dot-cache"
        ]
        let environment = unit.environment
        let pre = try unit.commands("ExecStartPre", specifiers: specifiers, environment: environment)
        let start = try #require(try unit.commands("ExecStart", specifiers: specifiers, environment: environment).first)
        let post = try unit.commands("ExecStartPost", specifiers: specifiers, environment: environment)
        let stop = try unit.commands("ExecStop", specifiers: specifiers, environment: environment)
        #expect(!start.arguments.contains("allow_other"))
        let serviceEnvironment = ["PATH": Self.systemPath, "HOME": scratch.root]
        for command in pre {
            _ = try HelperCommand.run(
                command.arguments[0], Array(command.arguments.dropFirst()), environment: serviceEnvironment)
        }
        let daemon = try ChildProcess.spawn(
            MountedImgfs.binary, Array(start.arguments.dropFirst()), environment: serviceEnvironment,
            outputPath: "\(scratch.root)/journal.log")
        defer { daemon.kill9AndReap() }
        for command in post {
            let result = try HelperCommand.run(
                command.arguments[0], Array(command.arguments.dropFirst()), environment: serviceEnvironment)
            #expect(result.status == 0, "ExecStartPost: \(result.output)")
        }
        try #require(scratch.isMounted, "journal:\n\(journal(scratch))")
        _ = scratch.daemonPID()
        #expect(scratch.superOptions?.split(separator: ",").contains("allow_other") == false)
        #expect(
            FileManager.default.fileExists(atPath: "\(scratch.root)/dot-cache/imgfs@mnt/v1"), "the cache is %C/imgfs@%i"
        )
        for command in stop {
            let result = try HelperCommand.run(
                command.arguments[0], Array(command.arguments.dropFirst()), environment: serviceEnvironment)
            #expect(result.status == 0, "ExecStop: \(result.output)")
        }
        #expect(daemon.wait(timeout: 15) == 0, "journal:\n\(journal(scratch))")
        #expect(!scratch.isMounted)
    }

    private func journal(_ scratch: ScratchMount) -> String {
        (try? String(contentsOfFile: "\(scratch.root)/journal.log", encoding: .utf8)) ?? ""
    }
}
