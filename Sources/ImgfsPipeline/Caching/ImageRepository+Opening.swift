import Foundation
import ImgfsModel
import ImgfsStore

extension ImageRepository {
    // MARK: - Opening

    /// What an open found: the metadata (and body, or file) for its answer, and what its reads are served from.
    public typealias Opened = (found: ImageSource.Found, body: OpenedBody)
    /// Called once with what an open found, or its failure.
    public typealias OpenedReply = @Sendable (Result<Opened, FetchError>) -> Void

    /// For an open: ``metadataAndBody(_:refresh:interest:reply:)`` (revalidating an expired copy), where an image
    /// found in the disk cache comes with its file, verified, when it is larger than `fileAbove` bytes (the kernel may
    /// read that by itself: the body does not come into memory), and with its whole body otherwise (read into the
    /// memory cache as its first read would, so the adapter can hand it over with the open). An unusable disk entry is
    /// dropped and the image resolved again (fetched). The answer says what the open file's reads are served from
    /// (``OpenedBody``), so they need not resolve the URL again; `glance` is told what the resolution found.
    public func opening(
        _ url: ImageURL, interest: Interest? = nil, fileAbove: Int, glance: (CacheGlance) -> Void = { _ in },
        reply: @escaping OpenedReply
    ) {
        resolve(url, refresh: true, interest: interest, glance: glance) { [self] result in
            let record: CacheRecord
            switch result {
            case .failure(let error):
                return reply(.failure(error))
            case .success(.disk(let found)):
                record = found
            case .success(let source):
                return ImageSource.answer(.success(source), interest: interest) { found in
                    reply(found.map { ($0, OpenedBody(source)) })
                }
            }
            if record.size > fileAbove {
                switch tiers.openDiskFile(record, of: url) {
                case .opened(let file):
                    state.withLock { $0.counters.diskHits += 1 }
                    reply(.success(((record.metadata, nil, file, false), .disk(record))))
                case .unavailable:
                    reply(.success(((record.metadata, nil, nil, false), .disk(record))))
                case .dropped:
                    opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
                }
                return
            }
            guard let body = tiers.readFromDisk(record, of: url, offset: 0, count: record.size) else {
                return opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
            }
            state.withLock { $0.counters.diskHits += 1 }
            reply(.success(((record.metadata, body, nil, false), .bytes(body))))
        }
    }

    /// Bytes `offset ..< offset + count` of the disk entry `record` an open file holds; nil when the entry is
    /// unusable (it is dropped, and the caller resolves the URL again).
    package func readOpened(_ record: CacheRecord, of url: ImageURL, offset: Int, count: Int) -> ImageSlice? {
        guard let slice = tiers.readFromDisk(record, of: url, offset: offset, count: count) else { return nil }
        state.withLock { $0.counters.diskHits += 1 }
        return slice
    }
}
