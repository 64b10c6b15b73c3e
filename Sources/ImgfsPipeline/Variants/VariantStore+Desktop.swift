import Foundation
import ImgfsModel
import ImgfsStore

// MARK: - Desktop thumbnails: the PNGs of the freedesktop.org Thumbnail Managing Standard

/// The PNG thumbnails file managers read (`.sh_thumbnails/<size>/` of a list or host, `imgfs thumbnails --desktop`):
/// variants like the others, through the same in-flight table, failure memory, workers, decode budget, memory and disk
/// tiers, under keys of their own.
///
/// Guarantees: a desktop thumbnail is a PNG of longer side at most ``DesktopThumbnailSize/pixels`` without text
/// chunks (the caller adds `Thumb::URI`, which depends on the name it is reached by, with ``ThumbnailPNG``); its
/// validator holds the original's mtime (``ImageMetadata/modificationSeconds``) and size, which
/// ``desktopFacts(of:)`` gives back for `Thumb::MTime` and `Thumb::Size`, and its ETag: an original with another
/// mtime, size or ETag has its thumbnail made again. Its validator never parses as a size, so `thumb/<px>/` never
/// lists it.
extension VariantStore {
    /// What a desktop thumbnail says of the file it was made from.
    public struct DesktopFacts: Equatable, Sendable {
        /// The original's mtime in seconds (`Thumb::MTime`).
        public var modified: Int
        /// The original's size in bytes (`Thumb::Size`).
        public var size: Int

        /// The facts of an original of mtime `modified` (seconds) and `size` bytes.
        public init(modified: Int, size: Int) {
            self.modified = modified
            self.size = size
        }
    }

    /// The desktop thumbnail of `url` of `size`: cached, or made now. With `refresh` (lookup, open), an expired one
    /// is revalidated through its original first.
    public func desktopThumbnail(
        _ size: DesktopThumbnailSize, of url: ImageURL, refresh: Bool, reply: @escaping VariantReply
    ) {
        let key = desktopKey(size, url)
        if let cached = cachedVariant(key, counting: true), isCurrentDesktop(cached, size: size, url: url),
            !refresh || now() < cached.expiresAt
        {
            return reply(.success(cached))
        }
        makeDesktop(size, url, key: key, reply: reply)
    }

    /// The desktop thumbnail of `url` of `size` when it is cached now (never makes anything).
    public func cachedDesktopThumbnail(_ size: DesktopThumbnailSize, of url: ImageURL) -> Variant? {
        cachedVariant(desktopKey(size, url), counting: false)
    }

    /// The last failure of the desktop thumbnail when it is not cached and not being made (never makes anything).
    public func knownDesktopFailure(_ size: DesktopThumbnailSize, of url: ImageURL) -> VariantError? {
        let key = desktopKey(size, url)
        if cachedVariant(key, counting: false) != nil { return nil }
        return repository.state.withLock { $0.inFlight.isProducing(key) ? nil : $0.failures.lastVariantError(key) }
    }

    /// The PNG of a desktop thumbnail found by ``desktopThumbnail(_:of:refresh:reply:)`` (nil when its disk entry
    /// turned out unusable: ask again).
    public func desktopPNG(_ variant: Variant, of url: ImageURL) -> [UInt8]? {
        switch variant {
        case .memory(let image):
            counters.withLock { $0.servedFromMemory += 1 }
            return image.bytes.copyBytes(offset: 0, count: image.metadata.size)
        case .disk(let record):
            guard let bytes = loadFromDisk(record, url: url) else { return nil }
            counters.withLock { $0.servedFromDisk += 1 }
            return bytes.copyBytes(offset: 0, count: record.size)
        }
    }

    /// The original's mtime and size a desktop thumbnail was made from (from its validator).
    public static func desktopFacts(of variant: Variant) -> DesktopFacts? {
        guard let parts = variant.metadata.etag?.split(separator: ";", maxSplits: 3, omittingEmptySubsequences: false),
            parts.count == 4, parts[0].hasPrefix("png"), let modified = Int(parts[1]), let size = Int(parts[2])
        else { return nil }
        return DesktopFacts(modified: modified, size: size)
    }

    /// The mtime in seconds of the original of `url` as it is known now (never fetches).
    public func originalModificationSeconds(_ url: ImageURL) -> Int? {
        (repository.tiers.lookup(url.cacheKey)?.metadata ?? repository.report(url).metadata)?.modificationSeconds
    }

    /// Drops the desktop thumbnail from every tier, its queued disk write included
    /// (`rm .sh_thumbnails/<size>/<md5>.png`).
    public func evictDesktop(_ size: DesktopThumbnailSize, of url: ImageURL) {
        let key = desktopKey(size, url)
        tiers.remove(key)
        repository.state.withLock { $0.failures.forget(key) }
    }

    /// Drops the desktop thumbnails of `url` of every size (its original changed).
    public func desktopOriginalChanged(_ url: ImageURL) {
        for size in DesktopThumbnailSize.allCases {
            let key = desktopKey(size, url)
            guard tiers.lookup(key) != nil else { continue }
            tiers.remove(key)
        }
    }

    // MARK: - Keys and validators

    /// The cache key: the SHA-256 of the PNG kind, the size and the original's URL (without fragment).
    func desktopKey(_ size: DesktopThumbnailSize, _ url: ImageURL) -> String {
        let scope = url.credentialScope.map { "\($0)/" } ?? ""
        return SHA256.hex(of: "imgfs-variant/desktop-png/\(size.pixels)/\(scope)\(url.resourceKey)".utf8)
    }

    /// `png<px>;<mtime>;<size>;<etag>`: what identifies the content of a desktop thumbnail.
    static func desktopValidator(_ size: DesktopThumbnailSize, _ original: ImageMetadata) -> String {
        "png\(size.pixels);\(original.modificationSeconds);\(original.size);\(original.etag ?? "")"
    }

    func isCurrentDesktop(_ variant: Variant, size: DesktopThumbnailSize, url: ImageURL) -> Bool {
        let cached = repository.tiers.lookup(url.cacheKey)?.metadata
        guard let original = cached ?? repository.report(url).metadata else { return true }
        return variant.metadata.etag == Self.desktopValidator(size, original)
    }

    // MARK: - Making

    private func makeDesktop(
        _ size: DesktopThumbnailSize, _ url: ImageURL, key: String, reply: @escaping VariantReply
    ) {
        make(
            url, key: key, validator: { Self.desktopValidator(size, $0) }, reply: reply,
            produce: { [self] original, _, body in
                produceDesktop(size, url, key: key, original: original, arrived: body)
            })
    }

    /// On a worker: decodes the whole original into the PNG and files it (as
    /// ``file(_:size:url:key:original:validator:)`` files any variant).
    private func produceDesktop(
        _ size: DesktopThumbnailSize, _ url: ImageURL, key: String, original: ImageMetadata, arrived: ImageSlice?
    ) {
        // The original as it is filed now: a refetch of the same content keeps its first fetch time (its mtime).
        let original = repository.tiers.lookup(url.cacheKey)?.metadata ?? original
        let validator = Self.desktopValidator(size, original)
        let bytes: ImageSlice
        if let larger = largerThumbnail(than: size, of: url, original: original) {
            bytes = larger
        } else if let arrived, arrived.count == original.size {
            bytes = arrived
        } else {
            switch wholeOriginal(url, size: original.size) {
            case .failure(let error): return failed(key, .original(error))
            case .success(let slice): bytes = slice
            }
        }
        let retry: @Sendable () -> Void = { [self] in
            workers.submit { [self] in produceDesktop(size, url, key: key, original: original, arrived: bytes) }
        }
        guard let made = timedDecode(bytes, { admittedDesktop($0, size, retry: retry) })?.made else { return }
        switch made {
        case .failure(let error):
            logger.warning(
                "desktop thumbnail failed: \(error)",
                metadata: ["url": "\(url.withoutFragment)", "size": "\(size.folder)"])
            if case .decodeTooLarge = error {
            } else {
                repository.state.withLock { $0.failures.remember(key, error, validator: validator, at: now()) }
            }
            failed(key, error)
        case .success(let variant):
            let kind = VariantKind(.fit(size.pixels), format: .png)
            let filed = file(variant, kind: kind, url: url, key: key, original: original, validator: validator)
            finish(key, .success(filed))
        }
    }

    /// The PNG of a larger desktop thumbnail of the same original when one is cached (the smallest such): a smaller
    /// one is made from it, a decode of a few hundred thousand pixels instead of the whole original.
    private func largerThumbnail(
        than size: DesktopThumbnailSize, of url: ImageURL, original: ImageMetadata
    ) -> ImageSlice? {
        for larger in DesktopThumbnailSize.allCases where larger.pixels > size.pixels {
            guard let cached = cachedVariant(desktopKey(larger, url), counting: false),
                cached.metadata.etag == Self.desktopValidator(larger, original),
                let png = desktopPNG(cached, of: url)
            else { continue }
            return ImageSlice(ImageBytes(copying: png), size: png.count, offset: 0, count: png.count)
        }
        return nil
    }

    /// Decodes with the desktop maker once ``decodeBudget`` admits the cost (as every variant's decode is admitted).
    private func admittedDesktop(
        _ original: UnsafeRawBufferPointer, _ size: DesktopThumbnailSize, retry: @escaping @Sendable () -> Void
    ) -> Result<MadeVariant, VariantError>? {
        guard let desktop = maker as? any DesktopThumbnailMaking else {
            return .failure(.undecodable("no PNG thumbnailer is configured"))
        }
        let maximumPixels = configuration.maximumPixels
        let make = { desktop.makePNGThumbnail(of: original, longerSide: size.pixels, maximumPixels: maximumPixels) }
        let cost = maker.decodeCost(of: original)
        let pixels = (cost?.width ?? 0).multipliedReportingOverflow(by: cost?.height ?? 0)
        guard let cost, cost.bytes > 0, !pixels.overflow, pixels.partialValue <= maximumPixels else { return make() }
        let limit = decodeLimit
        switch decodeBudget.admit(cost.bytes, limit: limit, retry: retry) {
        case .refused:
            return .failure(.decodeTooLarge(cost, budget: limit))
        case .parked:
            return nil
        case .admitted:
            defer { decodeBudget.release(cost.bytes) }
            return make()
        }
    }
}
