/// Lets `-o` carry imgfs's own options in fstab form (`-o memory_limit=64M,allow_other,cache_control`), as mount(8),
/// fstab and systemd pass them: each `-o` item that names an imgfs option becomes that option; fstab-only items
/// (`defaults`, `noauto`, `_netdev`, `x-systemd.*`, …) are dropped; the rest stay FUSE options.
///
/// Guarantees: the imgfs options recognised are exactly those of ``OptionDefinitions/mount``, so every long option
/// has its fstab form (`name=value`, or `name` for a flag; `_` may stand for `-`), `--tune` included
/// (`tune=KEY=VALUE`).
enum FstabOptions {
    static let fstabOnly: Set<String> = [
        "defaults", "auto", "noauto", "user", "users", "nouser", "nofail", "_netdev",
        "rw"
    ]

    /// The names of imgfs's subcommands (and `help`): a first argument that is none of them is mount(8)'s SOURCE.
    static var subcommands: Set<String> {
        Set(Imgfs.configuration.subcommands.map { $0._commandName } + ["help"])
    }

    /// `arguments` (without the program name) with the `-o` items of a `mount` command rewritten. The form mount(8)
    /// and mount.fuse3 use, `imgfs SOURCE MOUNTPOINT -o OPTIONS` (for `mount -t fuse.imgfs none /mnt/img -o …` and
    /// fstab lines), is taken as `imgfs mount MOUNTPOINT -o OPTIONS`.
    static func rewrite(_ arguments: [String]) -> [String] {
        var arguments = arguments
        if arguments.count >= 2, let first = arguments.first, !first.hasPrefix("-"), !subcommands.contains(first),
            !arguments[1].hasPrefix("-")
        {
            arguments = ["mount"] + arguments.dropFirst()
        }
        guard arguments.first == "mount" else { return arguments }
        var result: [String] = []
        var fuse: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var list: String?
            if argument == "-o", index + 1 < arguments.count {
                list = arguments[index + 1]
                index += 1
            } else if argument.hasPrefix("-o"), argument.count > 2 {
                list = String(argument.dropFirst(2))
            }
            if let list {
                for item in list.split(separator: ",").map(String.init) { translate(item, into: &result, fuse: &fuse) }
            } else {
                result.append(argument)
            }
            index += 1
        }
        if !fuse.isEmpty { result += ["-o", fuse.joined(separator: ",")] }
        return result
    }

    private static func translate(_ item: String, into result: inout [String], fuse: inout [String]) {
        let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
        let name = parts[0].replacingOccurrences(of: "_", with: "-")
        if fstabOnly.contains(parts[0]) || parts[0].hasPrefix("x-") || parts[0] == "comment" { return }
        let options = OptionDefinitions.mount
        if options.flags.contains(name), parts.count == 1 {
            result.append("--\(name)")
        } else if options.valued.contains(name), parts.count == 2 {
            result += ["--\(name)", parts[1]]
        } else {
            fuse.append(item)
        }
    }
}
