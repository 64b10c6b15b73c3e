import Foundation
import ImgfsModel
import ImgfsStore
import Logging

/// The two cache tiers, memory over disk, seen as one: what is cached under a key, what to list, and emptying them.
/// The images have one; the variants (``VariantStore``) another, over the same write queue.
///
/// Guarantees: nothing here touches the network; ``lookup(_:counting:)`` is the one answer to "what is cached under
/// this key": it finds the memory copy first, then a body this instance queued for the disk (``DiskWriteScheduler``),
/// then the disk entry, and every other question (size, listing, URL of a key) is answered from it, so none of them
/// disagrees about a body held only in the queue; every purge logs what it freed; removing a key removes it from every
/// tier and calls off its queued write, and emptying the disk calls off every write queued for it.
public final class CacheTiers: Sendable {
    /// What `imgfs purge` empties.
    public enum PurgeKind: String, CaseIterable, Sendable {
        /// The memory cache (as memory pressure does).
        case memory
        /// Both caches.
        case disk
        /// Expired images, from both caches.
        case expired
    }

    /// The memory tier.
    public let memory: MemoryCache
    /// The disk tier, when the mount has one.
    public let disk: (any DiskCaching)?
    /// The disk writes queued: a tier between memory and disk until each lands.
    let writes: DiskWriteScheduler
    /// Where bodies read back from the disk are kept in memory.
    private let bodyMemory: BodyMemory
    /// The request rules the URL of a stored entry is named under (its cache key as the mount computes it now).
    package let rules: RequestRulesHolder
    private let logger: Logger

    /// The tiers `memory`, the writes queued in `writes` and `disk`, looked up in that order; bodies read from disk
    /// are held in `bodyMemory`, and keys follow the URLs' request rules in `rules`.
    public init(
        memory: MemoryCache, disk: (any DiskCaching)?, writes: DiskWriteScheduler,
        bodyMemory: BodyMemory = .ordinary, rules: RequestRulesHolder = RequestRulesHolder(), logger: Logger
    ) {
        self.memory = memory
        self.disk = disk
        self.writes = writes
        self.bodyMemory = bodyMemory
        self.rules = rules
        self.logger = logger
    }

    /// What is cached under `key`, and where: the memory cache, else a body queued for its disk write, else the disk
    /// cache (whose record may need a read of its metadata file). `counting` counts a memory hit or miss.
    public func lookup(_ key: String, counting: Bool = false) -> CachedEntry? {
        if let image = counting ? memory.image(forKey: key) : memory.peek(key) { return .memory(image) }
        if let image = writes.queuedImage(forKey: key, tier: ObjectIdentifier(self)) { return .memory(image) }
        return disk?.record(forKey: key).map { .disk($0) }
    }

    /// ``lookup(_:counting:)`` as a source to serve.
    package func source(_ key: String, counting: Bool) -> ImageSource? {
        lookup(key, counting: counting).map(ImageSource.init)
    }

    /// Queues the disk write of `image` as `record` (``DiskWriteScheduler/write(_:as:to:tier:then:)``): until it lands,
    /// ``lookup(_:counting:)`` and ``keys()`` find it. False, queueing nothing, without a disk cache or when the queue
    /// is full.
    func queueWrite(_ image: CachedImage, as record: CacheRecord, then done: @escaping @Sendable () -> Void) -> Bool {
        guard let disk else { return false }
        return writes.write(image, as: record, to: disk, tier: ObjectIdentifier(self), then: done)
    }

    /// The tiers' sizes and counters with the repository's, for `.imgfs/stats.json`.
    func statistics(
        counters: RepositoryCounters, inFlight: Int, sharedTier: SharedTierCounters?
    ) -> RepositoryStatistics {
        RepositoryStatistics(
            counters: counters, memory: memory.counters, memoryBytes: memory.totalBytes,
            memoryEntries: memory.count, memoryBudget: memory.budget,
            diskBytes: disk?.totalBytes ?? 0, diskEntries: disk?.count ?? 0,
            diskEvictions: disk?.evictionCount ?? 0, inFlight: inFlight, sharedTier: sharedTier)
    }

    /// The size of the image cached under `key` (``lookup(_:counting:)``), or nil when none holds it.
    package func cachedSize(_ key: String) -> Int? { lookup(key)?.metadata.size }

    /// Whether a tier holds `key` (``lookup(_:counting:)``, without counting a hit).
    package func holds(_ key: String) -> Bool { lookup(key) != nil }

    /// Bytes `offset ..< offset + count` of the disk entry `record` of `url`: the whole image moves to memory when it
    /// fits the budget, else the range is read from the file. Nil when the entry is unusable (corrupt, gone): it is
    /// then dropped from every tier and the log says why.
    func readFromDisk(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) -> ImageSlice? {
        do {
            return try readEntry(record, of: url, offset: offset, count: count)
        } catch {
            logger.warning(
                "disk cache entry unusable (\(error)); fetching again",
                metadata: ["url": "\(url.withoutFragment)"])
            remove(record.key)
            return nil
        }
    }

    /// What opening a disk entry's file gave.
    enum FileOpening {
        /// The verified file, for the kernel to read by itself.
        case opened(KernelReadableBody)
        /// The entry was unusable (corrupt, gone): it is dropped from every tier, and the log says why.
        case dropped
        /// No file to hand out (a cache without files, or a transient error): reads go through the daemon.
        case unavailable
    }

    /// The body file of the disk entry `record` of `url`, verified (its whole body once per entry and start), without
    /// moving the body into memory.
    func openDiskFile(_ record: CacheRecord, of url: ImageURL) -> FileOpening {
        do {
            guard let file = try disk?.openBody(key: record.key), let body = KernelReadableBody(file, size: record.size)
            else { return .unavailable }
            return .opened(body)
        } catch DiskCacheError.corrupt, DiskCacheError.notFound {
            logger.warning("disk cache entry unusable; fetching again", metadata: ["url": "\(url.withoutFragment)"])
            remove(record.key)
            return .dropped
        } catch {
            logger.warning(
                "cannot open a disk cache entry (\(error)); reading it through imgfs",
                metadata: ["url": "\(url.withoutFragment)"])
            return .unavailable
        }
    }

    private func readEntry(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) throws -> ImageSlice {
        guard let disk else { throw DiskCacheError.notFound(record.key) }
        disk.touch(key: record.key)
        if record.size <= memory.budget {
            let bytes = ImageBytes(copying: try disk.readAll(key: record.key), memory: bodyMemory)
            memory.insert(
                CachedImage(
                    url: url.withoutFragment, bytes: bytes, metadata: record.metadata,
                    expiresAt: record.expiresAt, validatedAt: record.lastValidated,
                    expiryFromHeaders: record.expiryFromHeaders, remoteAddress: record.remoteAddress),
                forKey: record.key)
            return ImageSlice(bytes, size: record.size, offset: offset, count: count)
        }
        let piece = try disk.read(key: record.key, offset: offset, count: count)
        return ImageSlice(bytes: ImageBytes(copying: piece), offset: 0, count: piece.count)
    }

    /// What a 304 renews: the expiry (and whether headers set it), when it was validated, the address it came from
    /// and the ETag (each only when the 304 says).
    struct Renewal {
        var expiresAt: Date
        var validatedAt: Date
        var expiryFromHeaders: Bool?
        var remoteAddress: String?
        var etag: String?
    }

    /// A 304 renewed the cached copy `fallback` of `key`: both tiers get the renewal; a disk copy that fits the budget
    /// comes into memory.
    func renew(_ key: String, fallback: ImageSource, _ renewal: Renewal) {
        if case .disk(let record) = fallback, memory.peek(key) == nil, record.size <= memory.budget,
            let body = try? disk?.readAll(key: key), let url = try? ImageURL(record.url, keying: rules.current)
        {
            memory.insert(
                CachedImage(
                    url: url, bytes: ImageBytes(copying: body, memory: bodyMemory),
                    metadata: record.metadata, expiresAt: renewal.expiresAt,
                    validatedAt: renewal.validatedAt, expiryFromHeaders: renewal.expiryFromHeaders,
                    remoteAddress: renewal.remoteAddress ?? record.remoteAddress), forKey: key)
        }
        memory.update(key) { image in
            image.expiresAt = renewal.expiresAt
            image.validatedAt = renewal.validatedAt
            image.expiryFromHeaders = renewal.expiryFromHeaders
            image.remoteAddress = renewal.remoteAddress ?? image.remoteAddress
            image.metadata.etag = renewal.etag ?? image.metadata.etag
        }
        let stored: CacheRecord?
        if case .disk(let record) = fallback { stored = record } else { stored = disk?.record(forKey: key) }
        if var record = stored {
            record.expiresAt = renewal.expiresAt
            record.validatedAt = renewal.validatedAt
            record.expiryFromHeaders = renewal.expiryFromHeaders
            record.remoteAddress = renewal.remoteAddress ?? record.remoteAddress
            record.etag = renewal.etag ?? record.etag
            try? disk?.update(record)
        }
    }

    func remove(_ key: String) {
        memory.remove(key)
        writes.cancel(key)
        disk?.remove(key: key)
    }

    /// Empties the disk cache and calls off the writes queued for it (the memory cache is left alone).
    func removeAllFromDisk() {
        writes.cancelAll(tier: ObjectIdentifier(self))
        disk?.removeAll()
    }

    /// The keys of every cached entry (memory, queued for the disk, disk), sorted: a snapshot to list in pages.
    public func keys() -> [String] {
        Set(memory.keys).union(writes.queuedKeys(tier: ObjectIdentifier(self))).union(disk?.keys() ?? []).sorted()
    }

    /// The URL cached under `key` (``lookup(_:counting:)``), if any (reads the disk record of that one entry at most).
    public func url(forKey key: String) -> ImageURL? { lookup(key)?.url(keying: rules.current) }

    /// Empties the memory cache (a memory-pressure purge); returns the bytes freed from it.
    @discardableResult
    public func purgeMemory(reason: String) -> Int {
        writes.hurry()
        let freed = memory.purge()
        logger.notice("memory purged (\(reason)): \(Quantity.describe(bytes: freed)) freed from the memory cache")
        return freed
    }

    /// Empties what `kind` names (`now` and `expiry` decide what has expired); logs what was freed.
    public func purge(_ kind: PurgeKind, now: Date, expiry: ExpiryPolicy) {
        switch kind {
        case .memory:
            purgeMemory(reason: "imgfs purge --memory")
        case .disk:
            let (entries, bytes) = (disk?.count ?? 0, disk?.totalBytes ?? 0)
            purgeMemory(reason: "imgfs purge --disk")
            removeAllFromDisk()
            logger.notice("disk cache purged: \(entries) images, \(Quantity.describe(bytes: bytes))")
        case .expired:
            memory.removeAll { expiry.expiry(of: $0) <= now }
            let (entries, bytes) = disk?.sweep(now: now, removeExpiredBefore: now) ?? (0, 0)
            logger.notice("expired images purged: \(entries) from disk (\(Quantity.describe(bytes: bytes)))")
        }
    }
}

// MARK: - CachedEntry

/// What a cache holds under a key (``CacheTiers/lookup(_:counting:)``): a body in memory (in the memory cache, or
/// queued for its disk write), or a disk entry.
///
/// Guarantees: a value; whichever tier answered, `metadata` and `expiresAt` are the entry's own, and a body queued
/// for the disk answers as `.memory` (its bytes are in memory until the write lands).
public enum CachedEntry: Sendable {
    case memory(CachedImage)
    case disk(CacheRecord)

    /// Its metadata: size, type, ETag, Last-Modified and fetch time.
    public var metadata: ImageMetadata {
        switch self {
        case .memory(let image): image.metadata
        case .disk(let record): record.metadata
        }
    }

    /// When it must be revalidated.
    public var expiresAt: Date {
        switch self {
        case .memory(let image): image.expiresAt
        case .disk(let record): record.expiresAt
        }
    }

    /// The URL (without fragment) it was fetched from, a disk record's keyed by `keying` (nil for a disk record whose
    /// URL does not parse).
    public func url(keying: (any CacheKeying)?) -> ImageURL? {
        switch self {
        case .memory(let image): image.url
        case .disk(let record): try? ImageURL(record.url, keying: keying)
        }
    }

    /// The tier, as extended attributes name it.
    var tier: ImageReport.Source {
        switch self {
        case .memory: .memory
        case .disk: .disk
        }
    }
}

extension ImageSource {
    /// The source a cached entry is.
    init(_ entry: CachedEntry) {
        switch entry {
        case .memory(let image): self = .memory(image)
        case .disk(let record): self = .disk(record)
        }
    }
}

// MARK: - CachedImage

/// A complete image held in memory, with what is needed to serve and revalidate it.
public struct CachedImage: Sendable {
    /// The URL (without fragment) it was fetched from.
    public var url: ImageURL
    /// The whole body.
    public var bytes: ImageBytes
    /// The metadata of the response the body came with.
    public var metadata: ImageMetadata
    /// After this the image must be revalidated before it is served (except when the origin cannot be reached).
    public var expiresAt: Date
    /// When the origin last vouched for these bytes (the fetch, or a 304).
    public var validatedAt: Date
    /// Whether HTTP headers set `expiresAt` (see ``CacheRecord/expiryFromHeaders``); ``ExpiryPolicy`` decides at use.
    public var expiryFromHeaders: Bool?
    /// The numeric address the bytes came from, when known (see ``CacheRecord/remoteAddress``).
    public var remoteAddress: String?

    /// An image of `url` with its body, metadata and expiry.
    public init(
        url: ImageURL, bytes: ImageBytes, metadata: ImageMetadata, expiresAt: Date, validatedAt: Date? = nil,
        expiryFromHeaders: Bool? = nil, remoteAddress: String? = nil
    ) {
        self.url = url
        self.bytes = bytes
        self.metadata = metadata
        self.expiresAt = expiresAt
        self.validatedAt = validatedAt ?? metadata.fetchedAt
        self.expiryFromHeaders = expiryFromHeaders
        self.remoteAddress = remoteAddress
    }

    /// Cost in the memory budget.
    public var cost: Int { metadata.size }
}

// MARK: - MemoryCache

/// Complete images in memory, least recently used first out, within a budget of bytes.
///
/// Guarantees: the bytes of the images it holds never exceed `budget` (an image larger than the budget is not kept);
/// dropping an entry (eviction, purge) never disturbs a reader that is using it: readers hold their own reference to
/// the bytes, which are freed when the last reader is done. Thread safe.
public final class MemoryCache: Sendable {
    /// Counters since the cache was made.
    public struct Counters: Codable, Equatable, Sendable {
        /// Look-ups that found an image.
        public var hits = 0
        /// Look-ups that found none.
        public var misses = 0
        /// Images dropped to stay within the budget.
        public var evictions = 0
        /// Purges (each empties the cache).
        public var purges = 0
    }

    private final class Node {
        let key: String
        var image: CachedImage
        var newer: Node?
        weak var older: Node?

        init(key: String, image: CachedImage) {
            self.key = key
            self.image = image
        }
    }

    private struct State {
        var nodes: [String: Node] = [:]
        var newest: Node?
        var oldest: Node?
        var bytes = 0
        var counters = Counters()
        var budget: Int
    }

    /// The most bytes held now: the configured budget, or less while a memory limit asks for less
    /// (``limit(to:)``).
    public var budget: Int { state.withLock { $0.budget } }
    /// The budget it was made with.
    public let configuredBudget: Int
    private let state: Locked<State>

    /// An empty cache that holds at most `budget` bytes (a negative budget counts as 0).
    public init(budget: Int) {
        configuredBudget = max(0, budget)
        state = Locked(State(budget: configuredBudget))
    }

    /// Holds at most `bytes` (never more than the configured budget; nil: the configured budget again), evicting
    /// the least recently used images at once to get there. Returns the budget now in force.
    @discardableResult
    public func limit(to bytes: Int?) -> Int {
        state.withLock { state in
            state.budget = min(configuredBudget, max(0, bytes ?? configuredBudget))
            Self.evict(&state, keeping: nil)
            return state.budget
        }
    }

    /// The image under `key`, now the most recently used; counted as a hit or a miss.
    public func image(forKey key: String) -> CachedImage? {
        state.withLock { state in
            guard let node = state.nodes[key] else {
                state.counters.misses += 1
                return nil
            }
            state.counters.hits += 1
            Self.unlink(node, &state)
            Self.pushNewest(node, &state)
            return node.image
        }
    }

    /// The image under `key` without counting or reordering.
    public func peek(_ key: String) -> CachedImage? {
        state.withLock { $0.nodes[key]?.image }
    }

    /// Keeps `image` under `key` (replacing what was there), evicting the least recently used images to stay within
    /// the budget. Returns false when the image alone is larger than the budget (it is then not kept).
    @discardableResult
    public func insert(_ image: CachedImage, forKey key: String) -> Bool {
        state.withLock { state in
            if let old = state.nodes.removeValue(forKey: key) {
                Self.unlink(old, &state)
                state.bytes -= old.image.cost
            }
            guard image.cost <= state.budget else { return false }
            let node = Node(key: key, image: image)
            state.nodes[key] = node
            Self.pushNewest(node, &state)
            state.bytes += image.cost
            Self.evict(&state, keeping: node)
            return true
        }
    }

    /// Drops the least recently used images (never `keeping`) until the bytes held fit the budget.
    private static func evict(_ state: inout State, keeping: Node?) {
        while state.bytes > state.budget, let victim = state.oldest, victim !== keeping {
            unlink(victim, &state)
            state.nodes[victim.key] = nil
            state.bytes -= victim.image.cost
            state.counters.evictions += 1
        }
    }

    /// Changes the image under `key` in place (e.g. a renewed expiry), if it is held.
    public func update(_ key: String, _ change: (inout CachedImage) -> Void) {
        state.withLock { state in
            guard let node = state.nodes[key] else { return }
            let before = node.image.cost
            change(&node.image)
            state.bytes += node.image.cost - before
        }
    }

    /// Drops the image under `key`.
    public func remove(_ key: String) {
        state.withLock { state in
            guard let node = state.nodes.removeValue(forKey: key) else { return }
            Self.unlink(node, &state)
            state.bytes -= node.image.cost
        }
    }

    /// Drops every image `shouldRemove` accepts (called with the lock held: it must not use the cache), in one pass.
    public func removeAll(where shouldRemove: (CachedImage) -> Bool) {
        state.withLock { state in
            for node in state.nodes.values.filter({ shouldRemove($0.image) }) {
                state.nodes[node.key] = nil
                Self.unlink(node, &state)
                state.bytes -= node.image.cost
            }
        }
    }

    /// Drops everything (a memory-pressure purge); returns the bytes freed from the cache.
    @discardableResult
    public func purge() -> Int {
        state.withLock { state in
            let freed = state.bytes
            state.nodes.removeAll()
            state.newest = nil
            state.oldest = nil
            state.bytes = 0
            state.counters.purges += 1
            return freed
        }
    }

    /// The keys held, in no particular order.
    public var keys: [String] { state.withLock { Array($0.nodes.keys) } }
    /// Bytes held.
    public var totalBytes: Int { state.withLock { $0.bytes } }
    /// Images held.
    public var count: Int { state.withLock { $0.nodes.count } }
    /// The counters so far.
    public var counters: Counters { state.withLock { $0.counters } }

    // MARK: - List (lock held)

    private static func unlink(_ node: Node, _ state: inout State) {
        let newer = node.newer, older = node.older
        newer?.older = older
        older?.newer = newer
        if state.newest === node { state.newest = older }
        if state.oldest === node { state.oldest = newer }
        node.newer = nil
        node.older = nil
    }

    private static func pushNewest(_ node: Node, _ state: inout State) {
        node.older = state.newest
        state.newest?.newer = node
        state.newest = node
        if state.oldest == nil { state.oldest = node }
    }
}

// MARK: - ExpiryPolicy

/// How long a fetched image stays fresh, and whether it may be stored at all.
///
/// By default every image is fresh for `lifetime` (24 h) whatever the origin says, as URLImage and SDWebImage do:
/// predictable, and image servers often send `no-cache` defensively. With `honorsCacheControl`, HTTP decides:
/// `no-store` is not stored on disk (and is stale at once), `no-cache` and `max-age=0` are stored but revalidated on
/// every open, `max-age=N` and `Expires` set the lifetime, and `lifetime` applies when the response says nothing.
///
/// Freshness is computed when an image is used, from the current policy: under the fixed lifetime an image is fresh
/// until its last validation (fetch or 304) + `lifetime`, whatever was stored when it was fetched, so a remount with
/// another `--expire` applies to every cached image; with `honorsCacheControl`, an expiry the response's headers set
/// is kept as stored, and one that fell back to `lifetime` is computed again.
public struct ExpiryPolicy: Sendable {
    /// How long an image is fresh when its headers do not decide (`--expire`).
    public var lifetime: TimeInterval
    /// Whether Cache-Control and Expires decide (`--cache-control`).
    public var honorsCacheControl: Bool

    /// A policy of `lifetime` seconds that honours the headers when `honorsCacheControl`.
    public init(lifetime: TimeInterval = 24 * 3600, honorsCacheControl: Bool = false) {
        self.lifetime = lifetime
        self.honorsCacheControl = honorsCacheControl
    }

    /// What to do with a response received at `now`.
    public struct Decision: Equatable, Sendable {
        /// Whether it may be written to the disk cache.
        public var store: Bool
        /// When the image stops being fresh.
        public var expiresAt: Date
        /// Whether the response's headers set `expiresAt` (with `honorsCacheControl`), rather than `lifetime`.
        public var fromHeaders: Bool

        /// A decision with the given fields.
        public init(store: Bool, expiresAt: Date, fromHeaders: Bool = false) {
            self.store = store
            self.expiresAt = expiresAt
            self.fromHeaders = fromHeaders
        }
    }

    /// When an image stops being fresh: `stored` when the headers set it (`fromHeaders`; nil, from an older record,
    /// counts as true) and HTTP decides, else `validatedAt` + the current `lifetime`.
    public func expiry(stored: Date, validatedAt: Date, fromHeaders: Bool?) -> Date {
        honorsCacheControl && fromHeaders != false ? stored : validatedAt + lifetime
    }

    /// ``expiry(stored:validatedAt:fromHeaders:)`` of a disk record.
    public func expiry(of record: CacheRecord) -> Date {
        expiry(stored: record.expiresAt, validatedAt: record.lastValidated, fromHeaders: record.expiryFromHeaders)
    }

    /// ``expiry(of:)-(CacheRecord)`` as the disk cache takes it.
    public var diskExpiry: @Sendable (CacheRecord) -> Date {
        { [self] record in expiry(of: record) }
    }

    /// ``expiry(stored:validatedAt:fromHeaders:)`` of an image in memory.
    public func expiry(of image: CachedImage) -> Date {
        expiry(stored: image.expiresAt, validatedAt: image.validatedAt, fromHeaders: image.expiryFromHeaders)
    }

    /// Whether a response with `head`, received at `now`, may be stored on disk and until when it is fresh.
    public func decide(for head: ResponseHead, now: Date) -> Decision {
        guard honorsCacheControl else { return Decision(store: true, expiresAt: now + lifetime) }
        let directives = Self.directives(head.cacheControl)
        if directives["no-store"] != nil { return Decision(store: false, expiresAt: now, fromHeaders: true) }
        if directives["no-cache"] != nil { return Decision(store: true, expiresAt: now, fromHeaders: true) }
        if let maxAge = directives["max-age"].flatMap({ $0 }).flatMap(DeltaSeconds.parse) {
            return Decision(store: true, expiresAt: now + TimeInterval(maxAge), fromHeaders: true)
        }
        if head.hasExpires {
            guard let expires = head.expires else { return Decision(store: true, expiresAt: now, fromHeaders: true) }
            return Decision(
                store: true, expiresAt: now + max(0, expires.timeIntervalSince(head.date ?? now)),
                fromHeaders: true)
        }
        return Decision(store: true, expiresAt: now + lifetime)
    }

    /// `no-cache, max-age=60` → ["no-cache": nil, "max-age": "60"] (names lower-cased, quotes removed).
    static func directives(_ header: String?) -> [String: String?] {
        var result: [String: String?] = [:]
        for part in (header ?? "").split(separator: ",") {
            let pieces = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pieces.first?.lowercased(), !name.isEmpty else { continue }
            result[name] = pieces.count > 1 ? pieces[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
        }
        return result
    }
}

// MARK: - Freshness

/// When a cached copy may be served without asking the origin, and what a 304 renews: the expiry rules of a mount
/// (`--expire`, `--cache-control`, a policy file's per-host rules) applied at use.
///
/// Guarantees: a copy is fresh until its expiry under its host's rule (in the request rules the caller gives: those of
/// the request or of the moment), computed at use from when it was last
/// validated (so a remount with another `--expire` applies to copies cached earlier); a copy the origin vouched for
/// less than `minimumFreshness` ago is fresh whatever its expiry; a 304 that says nothing about freshness keeps the
/// lifetime the stored response had (HTTP: a 304 updates only the headers it carries).
struct Freshness: Sendable {
    let expiry: ExpiryPolicy
    let minimumFreshness: TimeInterval

    /// The expiry rule of `url`'s host: its policy-file rule, else `--expire` / `--cache-control`.
    func rule(for url: ImageURL, under rules: RequestRules) -> ExpiryPolicy {
        rules.expiry(for: url.host, default: expiry)
    }

    /// When the cached copy `source` of `url` expires (nil for a transfer).
    func expiry(of source: ImageSource, url: ImageURL, under rules: RequestRules) -> Date? {
        switch source {
        case .memory(let image): rule(for: url, under: rules).expiry(of: image)
        case .disk(let record): rule(for: url, under: rules).expiry(of: record)
        case .download: nil
        }
    }

    /// Whether the cached copy `source` of `url` may be served at `now` without asking the origin.
    func isFresh(_ source: ImageSource, of url: ImageURL, under rules: RequestRules, now: Date) -> Bool {
        guard let expiresAt = expiry(of: source, url: url, under: rules) else { return true }
        if case .memory(let image) = source { return now < max(expiresAt, image.validatedAt + minimumFreshness) }
        return now < expiresAt
    }

    /// What a 304 `head` for `url`, arriving at `validatedAt`, renews of the cached copy `fallback`.
    func renewal(
        of fallback: ImageSource, url: ImageURL, under rules: RequestRules, by head: ResponseHead,
        validatedAt: Date
    ) -> CacheTiers.Renewal {
        let rule = rule(for: url, under: rules)
        let saysFreshness = head.cacheControl != nil || head.hasExpires || !rule.honorsCacheControl
        let decision = rule.decide(for: head, now: validatedAt)
        return CacheTiers.Renewal(
            expiresAt: saysFreshness ? decision.expiresAt : validatedAt + fallback.lifetime,
            validatedAt: validatedAt,
            expiryFromHeaders: saysFreshness ? decision.fromHeaders : fallback.expiryFromHeaders,
            remoteAddress: head.remoteAddress, etag: head.etag)
    }
}
