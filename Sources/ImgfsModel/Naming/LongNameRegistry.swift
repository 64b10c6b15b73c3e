import Foundation

/// Remembers which URL each digest name (`~<sha256>`) stands for, in memory.
///
/// Guarantees: a registered name resolves while the mount runs, until `byteLimit` bytes of newer registrations push
/// it out (oldest first): lookups of names nobody fetches, failing URLs included, never grow the daemon or the disk
/// without bound. Nothing is written to disk: a URL that was fetched is found after a remount through its cache
/// entry, whose key is the same digest (so the disk cap counts it and the sweep removes it with the image); a name
/// resolves only to a URL whose digest it is.
public final class LongNameRegistry: Sendable {
    private struct Table {
        var urls: [String: ImageURL] = [:]
        /// Names in the order they were registered, for pushing out the oldest.
        var order: [String] = []
        var first = 0
        var bytes = 0
    }

    /// The bytes of URL text kept at most.
    public let byteLimit: Int
    private let table = Locked(Table())

    /// An empty registry that keeps at most `byteLimit` bytes of URL text.
    public init(byteLimit: Int = 4 << 20) {
        self.byteLimit = byteLimit
    }

    /// Records `url` under its digest name and returns that name.
    @discardableResult
    public func register(_ url: ImageURL) -> String {
        let name = ImagePath.digestName(for: url)
        table.withLock { table in
            guard table.urls[name] == nil else { return }
            table.urls[name] = url
            table.order.append(name)
            table.bytes += url.string.utf8.count
            while table.bytes > byteLimit, table.first < table.order.count - 1 {
                let oldest = table.order[table.first]
                table.first += 1
                table.bytes -= table.urls.removeValue(forKey: oldest)?.string.utf8.count ?? 0
            }
            if table.first > 1024 && table.first * 2 > table.order.count {
                table.order.removeFirst(table.first)
                table.first = 0
            }
        }
        return name
    }

    /// The URL registered under `name`, if any.
    public func resolve(_ name: String) -> ImageURL? {
        table.withLock { $0.urls[name] }
    }

    /// How many names are registered now.
    public var count: Int { table.withLock { $0.urls.count } }
}
