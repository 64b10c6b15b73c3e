import ArgumentParser
import Foundation
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// `imgfs why URL...`: prints why a URL failed, as the mount remembers it. A failed URL has no file (its lookup fails
/// with the errno), so the reason is read from the mount's `.imgfs/` directory, by the URL's cache key.
struct WhyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "why",
        abstract: "Print why each URL failed in a running mount (what `user.imgfs.error` says), without fetching.",
        discussion: """
            Prints `<url>: <reason>` for each URL whose last fetch failed (until it is fetched successfully) or, \
            under --policy cache-only, that is not cached, `<url> <variant>: <reason>` for each variant of a cached \
            image that failed (thumb/<px>, fmt/<format>), and `<url>: no failure known` for the others. Exit status \
            0 when every URL had a reason, 1 otherwise.
            """
    )

    @Argument(help: "http or https URLs, as given to imgfs path.")
    var urls: [String]

    @Option(help: "The mount point (default: your one imgfs mount; with several, name one).")
    var mount: String?

    func run() throws {
        let mountPoint = try MountSelection.resolve(mount)
        var unknown = false
        for text in urls {
            guard let url = try? ImageURL(text) else {
                print("\(text): \(URLText.problem(text))")
                unknown = true
                continue
            }
            let name = ImageFilesystem.errorByKeyPrefix + url.cacheKey
            let reason = MountControl.get(name, on: "\(mountPoint)/.imgfs")
            let variants = MountControl.get(
                ImageFilesystem.variantErrorsByKeyPrefix + url.cacheKey, on: "\(mountPoint)/.imgfs")
            if let reason { print("\(text): \(reason)") }
            for line in variants?.split(separator: "\n") ?? [] { print("\(text) \(line)") }
            if reason == nil && variants == nil {
                print("\(text): no failure known (fetched successfully, cached, or not tried yet)")
                unknown = true
            }
        }
        if unknown { throw ExitCode.failure }
    }
}
