import ArgumentParser

/// The mount a command talks to: `MOUNTPOINT` or `--mount DIR`, else the caller's one imgfs mount (see
/// ``MountSelection``).
struct MountArgument: ParsableArguments {
    @Argument(help: "The mount point (default: your one imgfs mount; with several, name one).")
    var mountPoint: String?

    @Option(help: "The mount point, as an option (the same as the argument).")
    var mount: String?

    /// The absolute mount point to act on.
    func resolved() throws -> String {
        try MountSelection.resolve(argument: mountPoint, option: mount)
    }
}
