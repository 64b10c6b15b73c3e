import ArgumentParser
import Foundation
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// `imgfs path URL...`: prints the path to open for each URL (see ImagePath for the long-URL scheme).
struct PathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the path of each URL's file, relative to the mount root (or under --mount).",
        discussion: """
            URLs come from the arguments, or from standard input (one per line) when there are none or the only one \
            is "-". URLs whose percent-encoded form fits in 255 bytes get img/<encoded>. Longer ones get \
            img/+/<chunks> when the whole path fits in 4095 bytes, else img/~<sha256>, which a running mount must \
            learn first: imgfs registers it with the mount given by --mount, else with your one imgfs mount (with \
            several, it asks for --mount; it never uses another user's mount).
            """
    )

    @Argument(help: "http or https URLs; none or \"-\" reads them from standard input.")
    var urls: [String] = []

    @Option(help: "The mount point: print full paths, and register long URLs with this mount.")
    var mount: String?

    @Flag(
        help: """
            For programs that insist on a file extension: when the URL's path has no image extension, add an encoded \
            #.<ext> fragment (never sent to the server) from the image's signature, else its content type. Needs \
            --mount; an image not cached yet is fetched first (its first KiB is read through the mount).
            """)
    var ext = false

    @Flag(
        help: """
            Print a file:// URL that browsers load (the % of the encoded name written as %25, so that the name is not \
            decoded into slashes); implies full paths (--mount, or your one imgfs mount).
            """)
    var fileUrl = false

    func run() throws {
        let mountPoint = try resolvedMount()
        try URLText.forEach(try inputURLs()) { text in
            let path = try path(for: ImageURL(text), mountPoint: mountPoint)
            print(fileUrl ? FileURL.string(forPath: path) : path)
        }
    }

    /// The mount point to print paths under: --mount, or with --file-url the caller's only imgfs mount.
    private func resolvedMount() throws -> String? {
        guard mount != nil || fileUrl else { return nil }
        return try MountSelection.resolve(mount)
    }

    private func inputURLs() throws -> [String] {
        guard urls.isEmpty || urls == ["-"] else { return urls }
        return
            (readLine(strippingNewline: true).map { first in
                [first] + Array(sequence(state: ()) { _ in readLine(strippingNewline: true) })
            } ?? []).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    private func path(for original: ImageURL, mountPoint: String?) throws -> String {
        let url = ext ? try withExtension(original, mountPoint: mountPoint) : original
        let form = try registered(url, mountPoint: mountPoint)
        return mountPoint.map { "\($0)/\(form.relativePath)" } ?? form.relativePath
    }

    /// The form of `url`'s path; a digest name is registered first with the mount (--mount, else the caller's one).
    private func registered(_ url: ImageURL, mountPoint: String?) throws -> ImagePath.Form {
        let form = ImagePath.form(for: url, mountPointLength: mountPoint?.utf8.count)
        if case .digest(_, let chunks) = form {
            let mount = try mountPoint ?? MountSelection.resolve(nil)
            if let failure = MountPoint.register(chunks: chunks, in: mount), !failure.atLast {
                throw ValidationError(
                    "cannot register the URL with \(mount): \(String(cString: strerror(failure.errno)))")
            }
        }
        return form
    }

    /// `url` with `#.<ext>` added when its path lacks an image extension: from the signature of the image's first
    /// bytes (read through the mount, which fetches an image not cached yet), else from its content type.
    private func withExtension(_ url: ImageURL, mountPoint: String?) throws -> ImageURL {
        guard ImageExtension.fromPath(of: url) == nil, let mountPoint else { return url }
        let file = "\(mountPoint)/\(try registered(url, mountPoint: mountPoint).relativePath)"
        let prefix = FileHandle(forReadingAtPath: file).flatMap { handle in
            defer { try? handle.close() }
            return try? handle.read(upToCount: ImageSignature.bytesNeeded)
        }
        let bySignature = prefix.flatMap { ImageExtension.forSignature([UInt8]($0)) }
        let byType = MountControl.get("user.imgfs.content_type", on: file).flatMap(ImageExtension.forContentType)
        if let name = bySignature ?? byType {
            return try ImageURL(url.string + "#." + name)
        }
        let reason = MountControl.get(ImageFilesystem.errorByKeyPrefix + url.cacheKey, on: "\(mountPoint)/.imgfs")
        let message = "imgfs: \(url): no extension added: \(reason ?? "not a known image type")\n"
        FileHandle.standardError.write(Data(message.utf8))
        return url
    }
}
