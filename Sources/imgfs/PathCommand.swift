import ArgumentParser
import Foundation
import ImgfsCore

/// `imgfs path URL...`: prints the path to open for each URL (see ImagePath for the long-URL scheme).
struct PathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the path of each URL's file, relative to the mount root (or under --mount).",
        discussion: """
            URLs whose percent-encoded form fits in 255 bytes get img/<encoded>. Longer ones get img/+/<chunks> \
            when the whole path fits in 4095 bytes, else img/~<sha256>, which a running mount must learn first: \
            imgfs registers it with the mount given by --mount, or with every imgfs mount it finds.
            """
    )

    @Argument(help: "http or https URLs.")
    var urls: [String]

    @Option(help: "The mount point: print full paths, and register long URLs with this mount.")
    var mount: String?

    func run() throws {
        var failed = false
        for text in urls {
            do {
                print(try path(for: ImageURL(text)))
            } catch {
                FileHandle.standardError.write(Data("imgfs: \(text): \(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }

    private func path(for url: ImageURL) throws -> String {
        let mountPoint = mount.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        let form = ImagePath.form(for: url, mountPointLength: mountPoint?.utf8.count)
        if case .digest(_, let chunks) = form {
            let mounts = mountPoint.map { [$0] } ?? MountPoint.imgfsMounts()
            guard !mounts.isEmpty else {
                throw ValidationError("this URL needs a running mount to register with; pass --mount DIR")
            }
            for mount in mounts { try MountPoint.register(chunks: chunks, in: mount) }
        }
        return mountPoint.map { "\($0)/\(form.relativePath)" } ?? form.relativePath
    }
}
