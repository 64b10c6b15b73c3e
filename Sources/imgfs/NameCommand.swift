import ArgumentParser
import Foundation
import ImgfsFuse
import ImgfsModel

/// `imgfs name NAME...`: prints the URL each file name (or path) in a mount stands for: the reverse of `imgfs path`.
struct NameCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "name",
        abstract: "Print the URL each name under img/ stands for (the reverse of imgfs path).",
        discussion: """
            A NAME is a plain encoded name, img/<name>, a chunked path (img/+/...), or a full path in a mount. A \
            digest name (img/~<sha256>) is asked of the mount it is in (give its full path); nothing is fetched.
            """
    )

    @Argument(help: "Names or paths of files under a mount's img/ directory.")
    var names: [String]

    func run() throws {
        try URLText.forEach(names) { name in print(try url(for: name).string) }
    }

    private func url(for name: String) throws -> ImageURL {
        let marker = "/\(ImagePath.chunkDirectory)/"
        let encoded: String
        if let range = ("/" + name).range(of: marker, options: .backwards) {
            // Chunked: every piece but the last ends with the `+` that says another follows.
            let pieces = ("/" + name)[range.upperBound...].split(separator: "/", omittingEmptySubsequences: false)
            encoded = pieces.enumerated().map { index, piece in
                index < pieces.count - 1 && piece.hasSuffix("+") ? String(piece.dropLast()) : String(piece)
            }.joined()
        } else {
            encoded = String(name.split(separator: "/").last ?? "")
        }
        if ImagePath.isDigestName(Array(encoded.utf8)) {
            guard name.contains("/"), let text = MountControl.get("user.imgfs.url", on: name) else {
                throw ValidationError("a long-URL (digest) name: give its full path in a running mount")
            }
            return try ImageURL(text)
        }
        return try ImageURL(NameCodec.decode(Array(encoded.utf8)))
    }
}
