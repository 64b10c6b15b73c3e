import ImgfsModel
import ImgfsPipeline

/// An image file the kernel has open: made by its OPEN, it holds what that open found (``OpenedBody``: the transfer it
/// started or joined, the whole body, or a disk-cache entry), and its READs are served from that, without asking the
/// repository where the URL is served from again.
///
/// Guarantees: while the held body can serve, a read takes no repository lock and counts as no new caller of the
/// transfer; a read waits only for its own range of a transfer under way. When the held body can no longer serve (its
/// transfer failed or was called off, its disk entry is unusable) the URL is resolved again, as a read without a handle
/// would (a remembered failure, an expired copy served, or a new transfer), and later reads resolve it too. A purge
/// or eviction never disturbs it: it holds its own reference to the bytes.
final class OpenImage: Sendable {
    let url: ImageURL
    private let repository: ImageRepository
    /// nil once the held body could not serve: reads resolve the URL.
    private let body: Locked<OpenedBody?>

    init(_ url: ImageURL, body: OpenedBody, repository: ImageRepository) {
        self.url = url
        self.repository = repository
        self.body = Locked(body)
    }

    /// Bytes `offset ..< offset + count` (fewer at the end), as soon as they have arrived.
    func read(
        offset: Int, count: Int, interest: Interest?,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        switch body.withLock({ $0 }) {
        case nil:
            repository.read(url, offset: offset, count: count, interest: interest, reply: reply)
        case .bytes(let whole):
            reply(.success(ImageSlice(whole.bytes, size: whole.count, offset: offset, count: count)))
        case .download(let download):
            download.read(offset: offset, count: count, interest: interest) { [self] result in
                guard case .failure = result, case .failed = download.phase else { return reply(result) }
                resolveAgain(offset: offset, count: count, interest: interest, reply: reply)
            }
        case .disk(let record):
            guard let slice = repository.readOpened(record, of: url, offset: offset, count: count) else {
                return resolveAgain(offset: offset, count: count, interest: interest, reply: reply)
            }
            if slice.bytes.count == record.size {
                // The whole body came into memory: later reads take it from there.
                body.withLock { $0 = .bytes(ImageSlice(bytes: slice.bytes, offset: 0, count: record.size)) }
            }
            reply(.success(slice))
        }
    }

    /// The held body cannot serve any more: this read and the later ones resolve the URL.
    private func resolveAgain(
        offset: Int, count: Int, interest: Interest?,
        reply: @escaping @Sendable (Result<ImageSlice, FetchError>) -> Void
    ) {
        body.withLock { $0 = nil }
        repository.read(url, offset: offset, count: count, interest: interest, reply: reply)
    }
}
