import Foundation
import Glibc
import ImgfsSystem

/// Which imgfs mount a command acts on when it is not told (`--mount DIR` or a MOUNTPOINT argument): the one mount
/// owned by the caller, found in the mount table.
///
/// Guarantees: a mount point given is used as given (the kernel's permissions apply); without one, only imgfs mounts
/// whose `user_id` is the caller's uid are candidates, exactly one is used, and otherwise the command fails naming
/// the caller's candidates; a mount of another user is never chosen (nor named).
enum MountSelection {
    /// The mount point to act on: `given` (made absolute), else the caller's only imgfs mount.
    static func resolve(_ given: String?) throws -> String {
        if let given { return URL(fileURLWithPath: given).standardizedFileURL.path }
        let mounts = MountTable.current().entries.filter { $0.type == "fuse.imgfs" }
        let uid = getuid()
        let own = mounts.filter { $0.userID == uid }.map(\.mountPoint)
        if own.count == 1 { return own[0] }
        let others = mounts.count - own.count
        let ignored = others == 0 ? "" : " (\(others) imgfs mount\(others == 1 ? "" : "s") of other users not used)"
        if own.isEmpty {
            throw MountPoint.Unusable(
                description: "no imgfs mount of yours (uid \(uid)) found\(ignored); pass --mount DIR")
        }
        throw MountPoint.Unusable(
            description:
                "\(own.count) imgfs mounts of yours: \(own.joined(separator: ", ")); pass --mount DIR to choose one"
                + ignored)
    }

    /// `--mount` and a MOUNTPOINT argument together: one of them, or a usage error when they differ.
    static func resolve(argument: String?, option: String?) throws -> String {
        if let argument, let option,
            URL(fileURLWithPath: argument).standardizedFileURL != URL(fileURLWithPath: option).standardizedFileURL
        {
            throw MountPoint.Unusable(description: "two mount points given (\(argument) and --mount \(option))")
        }
        return try resolve(argument ?? option)
    }
}
