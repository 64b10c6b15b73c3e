import Foundation
import ImgfsModel

extension ImageRepository {
    // MARK: - Opening

    /// For an open: ``metadataAndBody(_:refresh:interest:reply:)`` (revalidating an expired copy), where an image
    /// found in the disk cache comes with its file, verified, when it is larger than `fileAbove` bytes (the kernel may
    /// read that by itself: the body does not come into memory), and with its whole body otherwise (read into the
    /// memory cache as its first read would, so the adapter can hand it over with the open). An unusable disk entry is
    /// dropped and the image resolved again (fetched).
    public func opening(
        _ url: ImageURL, interest: Interest? = nil, fileAbove: Int, reply: @escaping ImageSource.FoundReply
    ) {
        resolve(url, refresh: true, interest: interest) { [self] result in
            guard case .success(.disk(let record)) = result else {
                return ImageSource.answer(result, interest: interest, reply: reply)
            }
            if record.size > fileAbove {
                switch tiers.openDiskFile(record, of: url) {
                case .opened(let file):
                    state.withLock { $0.counters.diskHits += 1 }
                    reply(.success((record.metadata, nil, file, false)))
                case .unavailable:
                    reply(.success((record.metadata, nil, nil, false)))
                case .dropped:
                    opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
                }
                return
            }
            guard let body = tiers.readFromDisk(record, of: url, offset: 0, count: record.size) else {
                return opening(url, interest: interest, fileAbove: fileAbove, reply: reply)
            }
            state.withLock { $0.counters.diskHits += 1 }
            reply(.success((record.metadata, body, nil, false)))
        }
    }
}
