import ImgfsModel

/// The probes that ended after their first bytes and wait for someone to want the rest, oldest first, at most
/// ``limit`` of them: each holds up to ``ImageRepository/probeBytes`` of memory, so `ls -l` of a large list must not
/// keep one per entry.
///
/// Guarantees: thread safe; ``note(_:)`` returns the downloads that fell out of the window (the caller drops those
/// still probed, whose next stat then probes again).
final class ProbedDownloads: Sendable {
    /// How many probes are kept (with 64 KiB each, 32 MiB at most).
    static let limit = 512

    private let kept = Locked<[Download]>([])

    /// `download` has just been probed; returns the ones to drop.
    func note(_ download: Download) -> [Download] {
        kept.withLock { kept in
            kept.removeAll { !$0.isProbed }
            kept.append(download)
            guard kept.count > Self.limit else { return [] }
            defer { kept.removeFirst(kept.count - Self.limit) }
            return Array(kept.prefix(kept.count - Self.limit))
        }
    }
}
