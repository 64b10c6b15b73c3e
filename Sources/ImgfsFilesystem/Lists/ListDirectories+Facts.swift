import Foundation
import ImgfsModel

// MARK: - What the lists know of their entries

extension ListDirectories {
    /// Where `url` was last looked up in a list: the list, the entry's position and URL text, and the list's facts.
    struct Place {
        let list: ImageList
        let index: Int
        let urlText: String
        let facts: ListFacts
    }

    /// The list entry `url` was last looked up as, when that list still holds it there.
    func place(of url: ImageURL) -> Place? {
        guard let (name, index) = positions.withLock({ $0[url] }), let (list, facts) = store.listWithFacts(name),
            let facts, list.entries.indices.contains(index), list.entries[index].urlText == url.string
        else { return nil }
        return Place(list: list, index: index, urlText: list.entries[index].urlText, facts: facts)
    }

    /// What the list that `url` was last looked up in knows of it.
    func facts(of url: ImageURL) -> EntryFacts? {
        place(of: url).flatMap { $0.facts.facts(at: $0.index, urlText: $0.urlText) }
    }
}
