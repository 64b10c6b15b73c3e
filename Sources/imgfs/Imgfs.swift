import ArgumentParser
import ImgfsModel
import ImgfsStore
import ImgfsSystem

/// The `imgfs` command: mounts the filesystem and helps to name files in it.
@main
struct Imgfs: ParsableCommand {
    /// Parses the command line after turning imgfs options given in `-o` fstab form into ordinary options.
    static func main() {
        if let compress = OpenSSLSHA256.compress { SHA256.install(compress) }
        main(FstabOptions.rewrite(Array(CommandLine.arguments.dropFirst())))
    }

    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        abstract: "A FUSE filesystem that turns image URLs into ordinary files.",
        discussion: """
            Mount it, then open <mount>/img/<percent-encoded-url>: the first read fetches the image, later reads \
            are served from memory.
            """,
        version: version,
        subcommands: [
            MountCommand.self, PathCommand.self, NameCommand.self, WhyCommand.self, PrefetchCommand.self,
            StatsCommand.self, PurgeCommand.self, ReloadCommand.self, PolicyCommand.self,
            ListCommand.self, ThumbnailsCommand.self, VersionCommand.self
        ]
    )
}
