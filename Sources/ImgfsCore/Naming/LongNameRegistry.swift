import Foundation

/// Remembers which URL each digest name (`~<sha256>`) stands for.
///
/// Guarantees: a registered name resolves until the registry's directory is removed, across restarts (each entry is a
/// small file named by the digest, written atomically); a name resolves only to a URL whose digest it is, so a
/// tampered file cannot redirect a name to another URL.
public final class LongNameRegistry: Sendable {
    private let directory: URL?
    private let known = Locked<[String: ImageURL]>([:])

    /// A registry kept in `directory` (created when missing), or only in memory when `directory` is nil.
    public init(directory: URL?) {
        self.directory = directory
        if let directory {
            try? FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
    }

    /// Records `url` under its digest name and returns that name.
    @discardableResult
    public func register(_ url: ImageURL) -> String {
        let name = ImagePath.digestName(for: url)
        let isNew = known.withLock { table in
            defer { table[name] = url }
            return table[name] == nil
        }
        if isNew, let directory {
            try? Data(url.string.utf8).write(to: directory.appendingPathComponent(name), options: .atomic)
        }
        return name
    }

    /// The URL registered under `name`, if any.
    public func resolve(_ name: String) -> ImageURL? {
        if let url = known.withLock({ $0[name] }) { return url }
        guard let directory, let data = try? Data(contentsOf: directory.appendingPathComponent(name)),
            let text = String(data: data, encoding: .utf8), let url = try? ImageURL(text),
            ImagePath.digestName(for: url) == name
        else { return nil }
        known.withLock { $0[name] = url }
        return url
    }
}
