import ImgfsFilesystem

/// The names of the list being replaced, found by URL in the order they appear there (duplicates in turn), without a
/// string per entry: about 16 bytes per old entry plus a bit.
struct PreviousNames {
    private let list: ImageList
    /// (hash of the URL text, position), sorted.
    private let order: [(hash: UInt64, position: UInt32)]
    private var used: [Bool]

    init(_ list: ImageList) {
        self.list = list
        order = list.entries.indices.map { (list.urlHash(at: $0), UInt32($0)) }
            .sorted { $0.hash != $1.hash ? $0.hash < $1.hash : $0.position < $1.position }
        used = [Bool](repeating: false, count: list.entries.count)
    }

    /// The first name (and position) of `urlText` in the old list not taken yet.
    mutating func take(_ urlText: String) -> (name: String, position: Int)? {
        let hash = EntryFacts.hash(urlText)
        var low = 0
        var high = order.count
        while low < high {
            let middle = (low + high) / 2
            if order[middle].hash < hash { low = middle + 1 } else { high = middle }
        }
        while low < order.count, order[low].hash == hash {
            let position = Int(order[low].position)
            low += 1
            guard !used[position] else { continue }
            let entry = list.entries[position]
            guard entry.urlText == urlText else { continue }
            used[position] = true
            return (entry.name, position)
        }
        return nil
    }
}
