import Foundation
import ImgfsModel
import ImgfsPipeline

// MARK: - Listings with attributes (READDIRPLUS)

extension ImageFilesystem {
    /// One entry of a listing with attributes: the name, and the answer a lookup of it would give when that answer
    /// is known without the network.
    public typealias EntryOffer = (entry: DirectoryEntry, lookup: Entry?, next: Int)

    /// The entries of an open listing from position `offset` on (the page ``readDirectory(_:from:limit:)`` gives), each
    /// offered to `add` in order with the entry a lookup of its name would answer, where that answer is known without
    /// the network: in a list's folder an entry whose list knows it as a usable image (``EntryFacts``) and whose image
    /// is not cached, in flight or failed, or whose cached copy a lookup would serve as it is
    /// (``ImageRepository/settledMetadata(_:)``); in `hosts/` every host, and in a host's folder every image served so.
    /// Every other entry (`.` and `..`, failed entries, entries never probed, other folders) comes without one, and
    /// the kernel looks it up when it is used, as after a plain listing.
    ///
    /// Guarantees: nothing is fetched, probed or revalidated; an entry offered with a lookup answer counts one kernel
    /// reference to its inode, exactly as a lookup does (the kernel forgets it later), unless `add` refuses it (the
    /// reply is full): the offers stop there and the refused one is not counted. The answers are the ones a lookup
    /// gives (attributes, entry and attribute timeouts), and the entry's position in its list is remembered as a
    /// lookup remembers it.
    public func readDirectoryPlus(
        _ handle: UInt64, from offset: Int, limit: Int = 256, add: (EntryOffer) -> Bool
    ) {
        let page = readDirectory(handle, from: offset, limit: limit)
        guard !page.isEmpty else { return }
        let answer = lookupAnswers(handle, page: page)
        for item in page {
            let lookup = item.entry.name == "." || item.entry.name == ".." ? nil : answer?(item.entry.name, item.next)
            if add((item.entry, lookup, item.next)) {
                if lookup != nil { listedWithAttributes.add(1, ordering: .relaxed) }
                continue
            }
            // Not in the reply: the kernel never gets this reference.
            if let lookup { inodes.forget(lookup.attributes.inode, count: 1) }
            return
        }
    }

    /// What answers the lookups of the names of one page of listing `handle` without the network (nil: none are
    /// answered); each answer given counts one reference. The list's facts for the page are read at once.
    private func lookupAnswers(
        _ handle: UInt64, page: [(entry: DirectoryEntry, next: Int)]
    ) -> ((String, Int) -> Entry?)? {
        guard lists != nil, let inode = listed.directory(of: handle), let directory = inodes.node(inode) else {
            return nil
        }
        switch directory {
        case .list(let name):
            return listAnswers(handle, list: name, page: page)
        case .hosts:
            return { [self] name, _ in
                guard case .success(.host(let host)) = resolve(Array(name.utf8), in: directory) else { return nil }
                return Self.browseEntry(directoryEntry(inodes.lookUp(.host(host))), in: directory)
            }
        case .host:
            return { [self] name, _ in
                guard case .success(.image(let url)) = resolve(Array(name.utf8), in: directory),
                    let metadata = repository.settledMetadata(url)
                else { return nil }
                return Self.browseEntry(imageEntry(inodes.lookUp(.image(url)), metadata), in: directory)
            }
        default:
            return nil
        }
    }

    /// The answers for a page of list `name` listed by `handle`: from the list's facts, read for the page at once.
    /// Only while the list is the one the listing was taken of (a list replaced since answers nothing).
    private func listAnswers(
        _ handle: UInt64, list name: String, page: [(entry: DirectoryEntry, next: Int)]
    ) -> ((String, Int) -> Entry?)? {
        guard let lists, case .list(let leading, let snapshot)? = listings.withLock({ $0.open[handle] }),
            let (current, facts) = lists.store.listWithFacts(name), let facts,
            current.entries.storage === snapshot.entries.storage
        else { return nil }
        let indices = page.map { $0.next - 1 - leading.count }.filter { $0 >= 0 && $0 < current.entries.count }
        guard let first = indices.min(), let last = indices.max() else { return nil }
        let known = facts.facts(in: first..<(last + 1)) { current.entries[$0].urlText }
        let rules = repository.rules.current
        return { [self] entryName, next in
            let index = next - 1 - leading.count
            // Resolved as a lookup resolves the name (``resolveInLists(_:in:)``: the index file and the thumbnail
            // repository first, then the list's first entry of that name), and its position remembered as a lookup
            // remembers it; the list is the one the page was checked against.
            guard let facts = known[index], let usable = Self.metadata(facts), entryName != ListIndex.fileName,
                repositoryNode(Array(entryName.utf8), in: .list(name)) == nil,
                current.index(of: entryName) == index, let url = current.entries[index].url(keying: rules)
            else { return nil }
            lists.remember(url, inList: name, at: index)
            // As ``lookup(parent:name:waitForSize:interest:reply:)``: the facts while the repository knows nothing of
            // the image, else what it serves without the network, and nothing when only the network can tell.
            if !repository.isKnown(url) {
                return imageEntry(inodes.lookUp(.image(url)), usable)
            }
            guard let metadata = repository.settledMetadata(url) else { return nil }
            let entry = imageEntry(inodes.lookUp(.image(url)), metadata)
            learn(url)
            return entry
        }
    }

    /// `entry` as a lookup in `directory` under `lists/` or `hosts/` answers it (``browseReply(in:_:)``): the entries
    /// of a list keep their timeout, other names there are kept for ``browseEntryTimeout``.
    static func browseEntry(_ entry: Entry, in directory: Node) -> Entry {
        if case .list = directory { return entry }
        var entry = entry
        entry.entryTimeout = min(entry.entryTimeout, browseEntryTimeout)
        return entry
    }

    /// Where the kernel is told to drop names: off the FUSE threads, in order.
    static let invalidations = DispatchQueue(label: "imgfs.entry-invalidations")
}
