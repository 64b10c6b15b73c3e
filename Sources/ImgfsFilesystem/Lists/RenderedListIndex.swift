import ImgfsModel

/// The size of each list's `.index.jsonl` (and its bytes, for a small list), kept while neither the list nor what its
/// facts know changed, so the `stat`s of a file manager or of `ls -l` do not render a list of a million entries each.
///
/// Guarantees: sizes and bytes are those ``ListIndex/render(_:facts:)`` gives for the list and facts now, unless a
/// record was written meanwhile by another process; a list replaced under the same name, or a record written through
/// the list's ``ListFacts``, renders again; bytes are kept only up to ``keptBytesLimit`` per list (a larger index is
/// rendered again when opened), sizes for every list looked at.
final class RenderedListIndex: Sendable {
    private struct Rendered {
        /// The list's storage and facts objects (held, so another object cannot take the same address).
        let identity: [any AnyObject & Sendable]
        let version: UInt64
        let size: Int
        let bytes: [UInt8]?
    }

    /// The largest index whose bytes are kept between a `stat` and an `open`.
    static let keptBytesLimit = 1 << 20
    private let renderings = Locked<[String: Rendered]>([:])

    /// The size of the index of `list` with `facts`.
    func size(_ list: ImageList, facts: ListFacts?) -> Int {
        let (identity, version) = Self.identity(list, facts)
        if let kept = kept(list.name, identity, version) { return kept.size }
        return render(list, facts: facts, identity, version).count
    }

    /// The bytes of the index of `list` with `facts`.
    func content(_ list: ImageList, facts: ListFacts?) -> [UInt8] {
        let (identity, version) = Self.identity(list, facts)
        if let bytes = kept(list.name, identity, version)?.bytes { return bytes }
        return render(list, facts: facts, identity, version)
    }

    private static func identity(_ list: ImageList, _ facts: ListFacts?) -> ([any AnyObject & Sendable], UInt64) {
        ([list.entries.storage] + (facts.map { [$0] } ?? []), facts?.version ?? 0)
    }

    private func kept(_ name: String, _ identity: [any AnyObject & Sendable], _ version: UInt64) -> Rendered? {
        guard let kept = renderings.withLock({ $0[name] }), kept.version == version,
            kept.identity.count == identity.count, zip(kept.identity, identity).allSatisfy({ $0 === $1 })
        else { return nil }
        return kept
    }

    private func render(
        _ list: ImageList, facts: ListFacts?, _ identity: [any AnyObject & Sendable], _ version: UInt64
    ) -> [UInt8] {
        let bytes = ListIndex.render(list, facts: facts)
        let rendered = Rendered(
            identity: identity, version: version, size: bytes.count,
            bytes: bytes.count <= Self.keptBytesLimit ? bytes : nil)
        renderings.withLock { $0[list.name] = rendered }
        return bytes
    }
}
