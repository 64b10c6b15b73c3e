import ArgumentParser

/// `imgfs version`: prints the version, as `imgfs --version` does.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version", abstract: "Print the version of imgfs (as imgfs --version does).")

    func run() {
        print(Imgfs.version)
    }
}
