import Foundation
import ImgfsModel
import ImgfsPipeline

// MARK: - Lists' facts: stat without the network, and what is learnt of entries

extension ImageFilesystem {
    /// The entry of a list's image answered from what its list knows (``EntryFacts``), when the repository neither
    /// holds nor fetches it nor remembers its failure: a `stat` after a remount costs no request.
    func entryFromFacts(_ url: ImageURL) -> Entry? {
        // The list's facts first: a lookup in the position table, nothing for an image never looked up in a list.
        guard let lists, let facts = lists.facts(of: url), facts.status == .ok, let metadata = Self.metadata(facts),
            !repository.isKnown(url)
        else { return nil }
        return imageEntry(inodes.lookUp(.image(url)), metadata)
    }

    /// The metadata a usable entry's facts stand for.
    static func metadata(_ facts: EntryFacts) -> ImageMetadata? {
        guard facts.status == .ok, let size = facts.size else { return nil }
        return ImageMetadata(
            size: size, etag: facts.etag, lastModified: facts.modified, fetchedAt: facts.modified ?? Date())
    }

    /// Records in its list's facts what is known of `url` now, off the calling thread: its size, validators and
    /// modification time, its header once its first bytes are in (again when its transfer ends, if they are not yet),
    /// or its failure. An entry whose size changed from what its list said has its attributes dropped in the kernel.
    func learn(_ url: ImageURL) {
        guard let lists, lists.place(of: url) != nil else { return }
        lists.factsQueue.submit { [self] in record(url, again: true) }
    }

    /// `firstBytes`: the image's first bytes as they arrived in its transfer (a probe's too), when no tier holds them.
    private func record(_ url: ImageURL, again: Bool, firstBytes: [UInt8]? = nil) {
        guard let lists, let place = lists.place(of: url) else { return }
        let old = place.facts.facts(at: place.index, urlText: place.urlText)
        let report = repository.report(url)
        let new: EntryFacts
        if let error = report.error {
            switch error {
            case .cancelled, .shutDown, .notCached: return
            default: new = EntryFacts(failure: error.description)
            }
        } else if let metadata = report.metadata {
            let modified = metadata.lastModified ?? metadata.fetchedAt
            if let old, old.size == metadata.size, old.etag == metadata.etag, old.format != nil {
                // Already known; only the validators' times move.
                guard old.modified != PlausibleDate.check(modified) else { return }
                var renewed = old
                renewed.modified = PlausibleDate.check(modified)
                place.facts.record(renewed, at: place.index, urlText: place.urlText)
                return
            }
            let header = (firstBytes ?? repository.firstBytes(of: url)?.bytes).flatMap { ImageHeader.parse($0) }
            if header == nil && again { recordLater(url) }
            new = EntryFacts(size: metadata.size, header: header, modified: modified, etag: metadata.etag)
        } else {
            if again { recordLater(url) }
            return
        }
        guard new != old else { return }
        place.facts.record(new, at: place.index, urlText: place.urlText)
        if let oldSize = old?.size, oldSize != new.size, let inode = inodes.existingInode(.image(url)) {
            invalidate(inode)
        }
    }

    /// Records `url` again once the transfer under way has its first bytes (a probe stops after them; no request is
    /// made for them), else once it has ended.
    private func recordLater(_ url: ImageURL) {
        guard let lists else { return }
        repository.arrivingFirstBytes(of: url) { [self] bytes in
            guard let bytes else {
                return repository.whenSettled(url) { lists.factsQueue.submit { self.record(url, again: false) } }
            }
            lists.factsQueue.submit { self.record(url, again: false, firstBytes: bytes) }
        }
    }

    /// `user.imgfs.{format,width,height,orientation}` of an image: from its list's facts, else from its first bytes
    /// when a tier holds them.
    func headerAttributes(_ url: ImageURL) -> [(String, String?)] {
        var facts = lists?.facts(of: url)
        if facts?.format == nil, let (metadata, bytes) = repository.firstBytes(of: url) {
            facts = EntryFacts(size: metadata.size, header: ImageHeader.parse(bytes), modified: nil, etag: nil)
        }
        guard let facts, facts.status == .ok else { return [] }
        return [
            ("format", facts.format?.rawValue), ("width", facts.width.map(String.init)),
            ("height", facts.height.map(String.init)), ("orientation", facts.orientation.map(String.init))
        ]
    }
}

// MARK: - `lists/NAME/.index.jsonl`

extension ImageFilesystem {
    /// The content of list `name`'s `.index.jsonl` now (empty when the list is gone).
    func listIndexContent(_ name: String) -> [UInt8] {
        guard let (list, facts) = lists?.store.listWithFacts(name) else { return [] }
        return ListIndex.render(list, facts: facts)
    }

    /// The entry of list `name`'s `.index.jsonl`: its size now, attributes not to be cached (it grows as entries are
    /// learnt).
    func listIndexEntry(_ inode: UInt64, list name: String) -> Entry {
        let attributes = Attributes(
            inode: inode, kind: .file, size: listIndexContent(name).count,
            permissions: Self.permissions(of: .listIndex(name)), modified: Date(), linkCount: 1)
        return Entry(attributes: attributes, entryTimeout: Self.browseEntryTimeout, attributeTimeout: 0)
    }
}
