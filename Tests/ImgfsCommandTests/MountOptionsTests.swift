import Testing

@testable import imgfs

/// Issue 35: `imgfs mount --help` stays readable, and every option keeps its fstab form.
@Suite("imgfs mount options")
struct MountOptionsTests {
    @Test("imgfs mount has at most 30 options (counted from the parser's definitions)")
    func optionCount() {
        let options = OptionDefinitions.mount
        #expect(options.count <= 30, "\(options.count) options")
        // -o is the one short-only option; --version is ArgumentParser's, and counted.
        #expect(options.count == options.flags.count + options.valued.count + 2)
        #expect(options.valued.contains("tune") && options.flags.contains("foreground"))
    }

    @Test("every option is in a titled group of --help; only ArgumentParser's --version and --help are not")
    func everyOptionGrouped() {
        let help = MountCommand.helpMessage(columns: 200)
        let sections = help.components(separatedBy: "\n\n")
        let untitled = sections.first { $0.hasPrefix("OPTIONS:") } ?? ""
        let untitledOptions = untitled.split(separator: "\n").filter { $0.hasPrefix("  -") }
        #expect(untitledOptions.allSatisfy { $0.contains("--help") || $0.contains("--version") }, "\(untitled)")
        let titles = sections.compactMap { $0.split(separator: "\n").first }.filter { $0.hasSuffix(":") }
        for title in ["MOUNT AND LOG:", "CACHE:", "NETWORK:", "REQUESTS:", "LISTS AND VARIANTS:", "ADVANCED:"] {
            #expect(titles.contains { $0 == title }, "\(title) missing: \(titles)")
        }
        for name in OptionDefinitions.mount.flags.union(OptionDefinitions.mount.valued) {
            #expect(help.contains("--\(name)"), "--\(name) missing from --help")
        }
    }

    @Test("every long option has its -o form, flags as names, the rest as name=value")
    func everyLongOption() {
        let options = OptionDefinitions.mount
        for flag in options.flags {
            let fstab = flag.replacingOccurrences(of: "-", with: "_")
            #expect(FstabOptions.rewrite(["mount", "/mnt", "-o", fstab]) == ["mount", "/mnt", "--\(flag)"])
        }
        for option in options.valued {
            let fstab = option.replacingOccurrences(of: "-", with: "_")
            #expect(
                FstabOptions.rewrite(["mount", "/mnt", "-o", "\(fstab)=x"]) == ["mount", "/mnt", "--\(option)", "x"])
        }
    }

    @Test("a few options in fstab form, a tune key among them; FUSE and fstab-only items are kept or dropped")
    func fewOptions() {
        let rewritten = FstabOptions.rewrite([
            "none", "/mnt/img", "-o",
            "allow_other,memory_limit=64M,cache_control,tune=kernel_read_ahead=512,nonempty,noauto,x-systemd.after=a"
        ])
        #expect(
            rewritten == [
                "mount", "/mnt/img", "--memory-limit", "64M", "--cache-control", "--tune", "kernel_read_ahead=512",
                "-o", "allow_other,nonempty"
            ])
        let command = try? MountCommand.parse(Array(rewritten.dropFirst()))
        #expect(command?.process.allowsNonEmpty == true)
        #expect(command?.process.fuseOptions == ["allow_other", "default_permissions"])
        #expect((try? command?.advanced.tuning())?.kernelReadAheadKiB == 512)
    }
}
