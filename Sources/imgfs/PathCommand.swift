import ArgumentParser
import Foundation
import ImgfsCore
import ImgfsFuse

/// `imgfs path URL...`: prints the path to open for each URL (see ImagePath for the long-URL scheme).
struct PathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the path of each URL's file, relative to the mount root (or under --mount).",
        discussion: """
            URLs come from the arguments, or from standard input (one per line) when there are none or the only one \
            is "-". URLs whose percent-encoded form fits in 255 bytes get img/<encoded>. Longer ones get \
            img/+/<chunks> when the whole path fits in 4095 bytes, else img/~<sha256>, which a running mount must \
            learn first: imgfs registers it with the mount given by --mount, or with every imgfs mount it finds.
            """
    )

    @Argument(help: "http or https URLs; none or \"-\" reads them from standard input.")
    var urls: [String] = []

    @Option(help: "The mount point: print full paths, and register long URLs with this mount.")
    var mount: String?

    @Flag(help: """
        For programs that insist on a file extension: when the URL's path has no image extension, add an encoded \
        #.<ext> fragment (never sent to the server) from the content type of the cached image (read with --mount, \
        without fetching).
        """)
    var ext = false

    func run() throws {
        var failed = false
        for text in try inputURLs() {
            do {
                print(try path(for: ImageURL(text)))
            } catch {
                FileHandle.standardError.write(Data("imgfs: \(text): \(error)\n".utf8))
                failed = true
            }
        }
        if failed { throw ExitCode.failure }
    }

    private func inputURLs() throws -> [String] {
        guard urls.isEmpty || urls == ["-"] else { return urls }
        return (readLine(strippingNewline: true).map { first in
            [first] + Array(sequence(state: ()) { _ in readLine(strippingNewline: true) })
        } ?? []).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    private func path(for original: ImageURL) throws -> String {
        let mountPoint = mount.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
        let url = ext ? try withExtension(original, mountPoint: mountPoint) : original
        let form = ImagePath.form(for: url, mountPointLength: mountPoint?.utf8.count)
        if case .digest(_, let chunks) = form {
            let mounts = mountPoint.map { [$0] } ?? MountPoint.imgfsMounts()
            guard !mounts.isEmpty else {
                throw ValidationError("this URL needs a running mount to register with; pass --mount DIR")
            }
            for mount in mounts {
                if let failure = MountPoint.register(chunks: chunks, in: mount), !failure.atLast {
                    throw ValidationError("cannot register the URL with \(mount): \(String(cString: strerror(failure.errno)))")
                }
            }
        }
        return mountPoint.map { "\($0)/\(form.relativePath)" } ?? form.relativePath
    }

    /// `url` with `#.<ext>` added when its path lacks an image extension and the cached copy's type is known.
    private func withExtension(_ url: ImageURL, mountPoint: String?) throws -> ImageURL {
        guard ImageExtension.fromPath(of: url) == nil, let mountPoint else { return url }
        let file = "\(mountPoint)/\(ImagePath.form(for: url, mountPointLength: mountPoint.utf8.count).relativePath)"
        guard let type = MountControl.get("user.imgfs.content_type", on: file),
              let name = ImageExtension.forContentType(type) else { return url }
        return try ImageURL(url.string + "#." + name)
    }
}
