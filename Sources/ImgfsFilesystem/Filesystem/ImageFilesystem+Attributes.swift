import Foundation
import ImgfsModel
import ImgfsPipeline

// MARK: - Extended attributes

extension ImageFilesystem {
    /// The `user.imgfs.*` attributes of an image: what is known now. Never fetches anything.
    public func extendedAttributes(_ inode: UInt64) -> Result<[(name: String, value: String)], FilesystemError> {
        guard let node = inodes.node(inode) else { return .failure(.stale) }
        if case .thumbnail(.image(let size, let url)) = node {
            return .success(
                variantAttributes(size, url).compactMap { name, value in
                    value.map { (Self.attributePrefix + name, $0) }
                })
        }
        guard case .image(let url) = node else { return .success(node == .lists ? listsAttributes() : []) }
        let report = repository.report(url)
        let iso = ISO8601DateFormatter()
        var attributes: [(String, String?)] = [
            ("url", url.string),
            ("content_type", report.metadata?.contentType),
            ("size", (report.metadata?.size ?? lists?.facts(of: url)?.size).map(String.init)),
            ("source", report.source?.rawValue),
            ("fetched_at", report.metadata.map { iso.string(from: $0.fetchedAt) }),
            ("expires_at", report.expiresAt.map { iso.string(from: $0) }),
            ("etag", report.metadata?.etag),
            ("error", report.error.map { "\($0) from \(url.withoutFragment)" })
        ]
        attributes += headerAttributes(url)
        attributes = attributes.filter { $0.1 != nil }
        return .success(attributes.map { (Self.attributePrefix + $0.0, $0.1!) })
    }

    /// One attribute's value, or ``FilesystemError/noAttribute``.
    public func extendedAttribute(_ inode: UInt64, name: String) -> Result<[UInt8], FilesystemError> {
        // `ls -l` asks every file for security.selinux and system.posix_acl_access. EOPNOTSUPP for those namespaces
        // makes it stop asking for the rest of the mount; other names are answered without building the report (both
        // together took `ls -l` of 2,000 cached images from 0.4 s to the speed of tmpfs).
        guard let node = inodes.node(inode) else { return .failure(.stale) }
        if name.hasPrefix("security.") || name.hasPrefix("system.") { return .failure(.attributesNotSupported) }
        guard name.hasPrefix(Self.attributePrefix) else { return .failure(.noAttribute) }
        if node == .control, name.hasPrefix(Self.errorByKeyPrefix) {
            let key = String(name.dropFirst(Self.errorByKeyPrefix.count))
            guard let error = keys(key).lazy.compactMap({ self.repository.knownObstacle(forKey: $0) }).first else {
                return .failure(.noAttribute)
            }
            return .success(Array(error.description.utf8))
        }
        if node == .control, name.hasPrefix(Self.variantErrorsByKeyPrefix) {
            let key = String(name.dropFirst(Self.variantErrorsByKeyPrefix.count))
            let urls = keys(key).lazy.compactMap { self.repository.tiers.url(forKey: $0) }
            guard let url = urls.first, let failures = variantFailures(url) else { return .failure(.noAttribute) }
            return .success(Array(failures.utf8))
        }
        if node == .control, name.hasPrefix(Self.contentTypeByKeyPrefix) {
            let key = String(name.dropFirst(Self.contentTypeByKeyPrefix.count))
            let types = keys(key).lazy.compactMap {
                self.repository.tiers.lookup($0)?.metadata.contentType
            }
            guard let type = types.first else { return .failure(.noAttribute) }
            return .success(Array(type.utf8))
        }
        return extendedAttributes(inode).flatMap { attributes in
            guard let value = attributes.first(where: { $0.name == name })?.value else { return .failure(.noAttribute) }
            return .success(Array(value.utf8))
        }
    }

    /// Setting `user.imgfs.purge` on `.imgfs/` to `memory`, `disk` or `expired` purges that, of images and variants
    /// (what `imgfs purge` does), for the owner and root (others: EACCES); every other change is EROFS.
    public func setExtendedAttribute(
        _ inode: UInt64, name: String, value: [UInt8], caller: Caller
    ) -> Result<Void, FilesystemError> {
        guard inodes.node(inode) == .control, name == Self.attributePrefix + "purge" else { return .failure(.readOnly) }
        guard isTrusted(caller) else { return .failure(.accessDenied) }
        guard let kind = CacheTiers.PurgeKind(rawValue: String(decoding: value, as: UTF8.self)) else {
            return .failure(.invalidName)
        }
        repository.purge(kind)
        variants?.purge(kind)
        return .success(())
    }

    /// `key` (as a command computes it, without the mount's credentials), then its scoped form for each credential
    /// scope of the mount's rules.
    private func keys(_ key: String) -> [String] {
        [key] + repository.rules.current.credentialScopes.map { ImageURL.scopedKey(key, scope: $0) }
    }

    static let attributePrefix = "user.imgfs."
    /// On `.imgfs/`, `user.imgfs.error.<cache key>` is the last failure of the URL with that cache key (SHA-256 of
    /// ``ImageURL/requestString``), or under `cache-only` that it is not cached: a failed URL has no file to read
    /// `user.imgfs.error` from (`imgfs why` asks here).
    public static let errorByKeyPrefix = "user.imgfs.error."
    /// On `.imgfs/`, `user.imgfs.content_type.<cache key>` is the Content-Type of the cached image with that key,
    /// answered from the caches without a fetch (`imgfs list add` names entries with it, also with `--no-probe`).
    public static let contentTypeByKeyPrefix = "user.imgfs.content_type."
    /// On `.imgfs/`, `user.imgfs.variant_errors.<cache key>` lists the remembered failures of the variants (under
    /// `thumb/` and `fmt/`) of the cached image with that key, one `<variant>: <reason>` a line: a failed variant has
    /// no file to read `user.imgfs.error` from (`imgfs why` asks here).
    public static let variantErrorsByKeyPrefix = "user.imgfs.variant_errors."
}
