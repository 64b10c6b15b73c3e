import Foundation
import ImgfsModel
import ImgfsStore
import ImgfsWorkers
import Logging

/// Variants of images (`thumb/<px>/<name>`, `thumb/<W>x<H>/<name>`, `fmt/<format>/<name>`): made from the original on a
/// bounded pool of workers, cached in memory and on disk as entries of their own.
///
/// Guarantees:
/// - Only the configured sizes, exact sizes and format views exist (``allows(_:)``); any other is not found, so nobody
///   can make the daemon produce unbounded variants.
/// - One production per size and URL at a time; every caller joins it. The original comes through the
///   ``ImageRepository``, so every size asked for at once shares one transfer of the original.
/// - Decoding runs only on the store's workers (a ``WorkerPool``), never on the caller's thread, and a worker is
///   given a variant only once its original is complete: no worker waits for the network. A queued job holds no bytes
///   of a cached original; one whose transfer just completed holds that body (the bytes the memory cache holds, when
///   it could take them).
/// - A variant carries a validator made of its size and the original's size, ETag and Last-Modified, and the
///   original's expiry. A variant whose original is cached with another validator is made again; an expired one is
///   served by stat and read, and revalidated through its original (a 304 renews it) by lookup and open. A refreshed
///   original (``originalChanged(_:)``) drops its variants.
/// - A decode that cannot stream (interlaced PNG, progressive JPEG, GIF, HEIF) is admitted only while the estimates of
///   such decodes under way, its own included, stay within ``decodeLimit`` (``DecodeBudget``); one that can never fit
///   fails with ``VariantError/decodeTooLarge(_:budget:)``, one that fits later is parked off the workers.
/// - Nothing incomplete is served or cached: a variant is stored only once it is fully encoded. A failure is
///   answered with its error; a decoder's failure is remembered while the original keeps its validator.
/// - Variants are a second stage of the image pipeline: their productions live in the repository's in-flight table
///   (``InFlightTable``), their failures in its failure memory (``RememberedFailures``), and their disk writes go
///   through its write queue (``DiskWriteScheduler``), so a variant awaiting its write is found by every look-up.
/// - Its memory cache and disk cache are its own (a ``CacheTiers`` of its own over the shared write queue): variants
///   have budgets of their own (an eighth of the images'), so making them never evicts originals, and they never
///   show up among the repository's images. ``CacheTiers/lookup(_:counting:)`` answers every "is it cached?".
public final class VariantStore: Sendable {
    /// What variants exist and how they are made.
    public struct Configuration: Sendable {
        /// The longer sides allowed (`--thumb-sizes`).
        public var sizes: [Int] = [64, 128, 256, 512, 1024]
        /// The exact sizes allowed (`--thumb-sizes` entries `<W>x<H>`), as ``VariantKind/Shape/cover(width:height:)``.
        public var exactSizes: [VariantKind.Shape] = []
        /// Where exact sizes are cropped (`--tune thumb-crop`).
        public var crop: VariantCrop = .centre
        /// The formats of the format views (`fmt/<format>/`): the whole image converted.
        public var formatViews: [VariantFormat] = [.jpeg, .png]
        /// Originals whose header announces more pixels are refused (`--tune max-pixels`).
        public var maximumPixels = 100_000_000
        /// The quality of JPEG variants.
        public var jpegQuality = 85

        /// The defaults above; the daemon sets each from its options.
        public init() {}
    }

    /// Where a variant is served from. Its metadata: its own size and type; the original's Last-Modified and fetch
    /// time; its validator as ETag.
    public typealias Variant = CachedEntry

    /// Answers a request for a variant: the variant, or why none could be made.
    public typealias VariantReply = @Sendable (Result<Variant, VariantError>) -> Void

    /// The sizes, limits and quality variants are made with.
    public let configuration: Configuration
    let repository: ImageRepository
    let maker: any VariantMaking
    /// The variants' memory and disk caches, over the repository's write queue.
    let tiers: CacheTiers
    var memory: MemoryCache { tiers.memory }
    var disk: (any DiskCaching)? { tiers.disk }
    let workers: WorkerPool
    let logger: Logger
    let now: @Sendable () -> Date
    /// Keys already computed (``key(_:_:)``).
    let keys = Locked<[VariantID: String]>([:])
    /// What the store did (``statistics()``).
    let counters = Locked(VariantCounters())
    /// The decodes that cannot stream, admitted against ``decodeLimit``.
    let decodeBudget = DecodeBudget()
    private let replacedHandler = LockedCallback<(VariantKind, ImageURL), Void>()

    /// A store of variants of `repository`'s images, made by `maker` on `workers` and cached in `memory` and `disk`
    /// (whose writes go through the repository's write queue); `now` gives the time.
    public init(
        repository: ImageRepository, maker: any VariantMaking, memory: MemoryCache, disk: (any DiskCaching)?,
        workers: WorkerPool, configuration: Configuration, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.repository = repository
        self.maker = maker
        self.tiers = CacheTiers(memory: memory, disk: disk, writes: repository.diskWrites, logger: logger)
        self.workers = workers
        self.configuration = configuration
        self.logger = logger
        self.now = now
    }

    /// Called (on a worker, before the callers are answered) when a variant replaces a cached one of other content.
    public func onReplaced(_ handler: @escaping @Sendable (_ kind: VariantKind, _ url: ImageURL) -> Void) {
        replacedHandler.install { handler($0.0, $0.1) }
    }

    func replaced(_ kind: VariantKind, _ url: ImageURL) {
        replacedHandler((kind, url))
    }

    /// The memory the decodes that cannot stream may hold together: the images' memory budget as it is now
    /// (`--memory-limit`, at most an eighth of the memory cgroup's limit), so that it shrinks with the cgroup.
    public var decodeLimit: Int { repository.tiers.memory.budget }

    /// Whether variants of `kind` exist: a configured size or exact size, or a format view's format.
    public func allows(_ kind: VariantKind) -> Bool {
        switch kind.shape {
        case .fit(let side): configuration.sizes.contains(side)
        case .cover: configuration.exactSizes.contains(kind.shape)
        case .whole: kind.format.map { configuration.formatViews.contains($0) } ?? false
        }
    }

    /// Every kind that exists: each size and exact size in each encoding, and the format views.
    public var allKinds: [VariantKind] {
        let shapes = configuration.sizes.map { VariantKind.Shape.fit($0) } + configuration.exactSizes
        let encodings: [VariantFormat?] = [nil] + VariantFormat.allCases
        return shapes.flatMap { shape in encodings.map { VariantKind(shape, format: $0) } }
            + configuration.formatViews.map { VariantKind(.whole, format: $0) }
    }

    // MARK: - Serving

    /// The variant `kind` of `url`: cached, or made now. With `refresh` (lookup, open), an expired variant is
    /// revalidated through its original first.
    public func variant(_ kind: VariantKind, of url: ImageURL, refresh: Bool, reply: @escaping VariantReply) {
        let key = key(kind, url)
        if let cached = cachedVariant(key, counting: true), isCurrent(cached, kind: kind, url: url),
            !refresh || now() < cached.expiresAt
        {
            return reply(.success(cached))
        }
        make(kind, url, key: key, reply: reply)
    }

    /// Bytes `offset ..< offset + count` of the variant (fewer at the end).
    public func read(
        _ kind: VariantKind, of url: ImageURL, offset: Int, count: Int,
        reply: @escaping @Sendable (Result<ImageSlice, VariantError>) -> Void
    ) {
        variant(kind, of: url, refresh: false) { [self] result in
            switch result {
            case .failure(let error):
                reply(.failure(error))
            case .success(.memory(let image)):
                counters.withLock { $0.servedFromMemory += 1 }
                reply(.success(ImageSlice(image.bytes, size: image.metadata.size, offset: offset, count: count)))
            case .success(.disk(let record)):
                guard let bytes = loadFromDisk(record, url: url) else {
                    return read(kind, of: url, offset: offset, count: count, reply: reply)
                }
                counters.withLock { $0.servedFromDisk += 1 }
                reply(.success(ImageSlice(bytes, size: record.size, offset: offset, count: count)))
            }
        }
    }

    // MARK: - Keys and validators

    /// The cache key of a variant: the SHA-256 of its kind's token and the original's URL (without fragment).
    /// Remembered (every open asks; a digest costs more than the rest of a cached open), up to ``rememberedKeys``.
    func key(_ kind: VariantKind, _ url: ImageURL) -> String {
        let id = VariantID(kind: kind, url: url)
        if let key = keys.withLock({ $0[id] }) { return key }
        let key = Self.uncachedKey(kind, url)
        keys.withLock { keys in
            if keys.count >= Self.rememberedKeys { keys.removeAll(keepingCapacity: true) }
            keys[id] = key
        }
        return key
    }

    /// ``key(_:_:)`` without remembering it.
    static func uncachedKey(_ kind: VariantKind, _ url: ImageURL) -> String {
        let scope = url.credentialScope.map { "\($0)/" } ?? ""
        return SHA256.hex(of: "imgfs-variant/\(Self.generation)\(kind.token)/\(scope)\(url.resourceKey)".utf8)
    }

    struct VariantID: Hashable {
        let kind: VariantKind
        let url: ImageURL
    }

    static let rememberedKeys = 4096

    /// What identifies the content of a variant: its kind and the original's size, ETag and Last-Modified.
    static func validator(_ kind: VariantKind, _ original: ImageMetadata) -> String {
        let modified = original.lastModified.map { String(Int(saturating: $0.timeIntervalSince1970)) } ?? ""
        return "\(generation)\(kind.token);\(original.size);\(original.etag ?? "");\(modified)"
    }

    /// The kind a validator was made for; nil for one of another generation.
    static func kind(ofValidator validator: String) -> VariantKind? {
        guard validator.hasPrefix(generation) else { return nil }
        return validator.dropFirst(generation.count).split(separator: ";", maxSplits: 1).first
            .flatMap { VariantKind(token: $0) }
    }

    /// Marks keys and validators of variants whose name says their type: entries made before (JPEG under any name)
    /// are never served, listed or made current again; the sweep and the size limit remove them.
    static let generation = "v2."

    // MARK: - Cache look-ups

    /// The variant cached under `key` (``CacheTiers/lookup(_:counting:)``: memory, the write queue, disk).
    func cachedVariant(_ key: String, counting: Bool) -> Variant? {
        tiers.lookup(key, counting: counting)
    }

    /// Whether `variant` was made from the original as it is cached now (true when the original is not cached).
    func isCurrent(_ variant: Variant, kind: VariantKind, url: ImageURL) -> Bool {
        // The cached original without building a whole report (every open asks); one being fetched otherwise.
        let cached = repository.tiers.lookup(url.cacheKey)?.metadata
        guard let original = cached ?? repository.report(url).metadata else { return true }
        return variant.metadata.etag == Self.validator(kind, original)
    }

    /// A disk variant's bytes, moved to memory; nil (and the entry dropped) when it is unusable.
    func loadFromDisk(_ record: CacheRecord, url: ImageURL) -> ImageBytes? {
        guard let disk else { return nil }
        do {
            let bytes = ImageBytes(copying: try disk.readAll(key: record.key))
            disk.touch(key: record.key)
            memory.insert(
                CachedImage(
                    url: url.withoutFragment, bytes: bytes, metadata: record.metadata,
                    expiresAt: record.expiresAt), forKey: record.key)
            return bytes
        } catch {
            logger.warning("variant disk entry unusable (\(error)); making it again", metadata: ["url": "\(url)"])
            disk.remove(key: record.key)
            return nil
        }
    }
}
