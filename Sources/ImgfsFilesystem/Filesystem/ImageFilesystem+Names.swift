import Foundation
import ImgfsModel

// MARK: - Resolving names

extension ImageFilesystem {
    /// The node `name` stands for in `directory`, or why it stands for none.
    func resolve(_ name: [UInt8], in directory: Node) -> Result<Node, FilesystemError> {
        do throws(NameError) {
            switch directory {
            case .root:
                if name == Array(ImagePath.imagesDirectory.utf8) { return .success(.images) }
                if name == Array(Self.controlDirectory.utf8) { return .success(.control) }
                if variants != nil, name == Array(Self.thumbnailDirectory.utf8) { return .success(.thumbnail(.root)) }
                if variants?.configuration.formatViews.isEmpty == false, name == Array(Self.formatDirectory.utf8) {
                    return .success(.thumbnail(.formatRoot))
                }
                if lists != nil && name == Array(Self.listsDirectory.utf8) { return .success(.lists) }
                if lists != nil && name == Array(Self.hostsDirectory.utf8) { return .success(.hosts) }
                return .failure(.notFound)
            case .control:
                guard let file = GeneratedFile(rawValue: String(decoding: name, as: UTF8.self)) else {
                    return .failure(.notFound)
                }
                return .success(.generated(file))
            case .images:
                if name == Array(ImagePath.chunkDirectory.utf8) { return .success(.chunkRoot) }
                if ImagePath.isDigestName(name) {
                    return .success(.image(try resolveDigest(String(decoding: name, as: UTF8.self))))
                }
                return .success(.image(try ImageURL(NameCodec.decode(name), keying: repository.rules.current)))
            case .chunkRoot:
                return try resolveChunk(name, after: "")
            case .chunkPrefix(let prefix):
                return try resolveChunk(name, after: prefix)
            case .thumbnail(let node):
                return resolveThumbnail(name, in: node)
            case .lists, .list, .hosts, .host:
                return resolveInLists(name, in: directory)
            case .desktop(let node):
                return resolveDesktop(name, in: node)
            case .image, .generated, .listIndex:
                return .failure(.notADirectory)
            }
        } catch {
            logger.info(
                "rejected name: \(error)", metadata: ["name": "\(String(decoding: name.prefix(300), as: UTF8.self))"])
            return .failure(FilesystemError(error))
        }
    }

    /// `~<sha256>`: from the registry, else from the cache (a cached URL's key is the SHA-256 of its text).
    private func resolveDigest(_ name: String) throws(NameError) -> ImageURL {
        if let url = registry.resolve(name) { return url }
        if let url = repository.tiers.url(forKey: String(name.dropFirst())), ImagePath.digestName(for: url) == name {
            return url
        }
        throw .unknownDigest
    }

    private func resolveChunk(_ name: [UInt8], after prefix: String) throws(NameError) -> Result<Node, FilesystemError>
    {
        let text = prefix + String(decoding: name, as: UTF8.self)
        guard text.utf8.count <= 3 * ImageURL.maximumLength else { throw .tooLong(text.utf8.count / 3) }
        if ImagePath.isContinuation(name) { return .success(.chunkPrefix(String(text.dropLast()))) }
        let url = try ImageURL(NameCodec.decode(Array(text.utf8)), keying: repository.rules.current)
        registry.register(url)
        return .success(.image(url))
    }

    /// The name under `img/` that opens `url`: its plain form, or its digest name.
    func listedName(_ url: ImageURL) -> String {
        switch ImagePath.form(for: url, mountPointLength: 0) {
        case .plain(let plain): plain
        case .chunked, .digest: ImagePath.digestName(for: url)
        }
    }

    static let controlDirectory = ".imgfs"
}
