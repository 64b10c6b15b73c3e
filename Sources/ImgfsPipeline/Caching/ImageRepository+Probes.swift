import Dispatch
import ImgfsModel

// MARK: - Probes: a lookup's or stat's transfer asks for the first bytes only

extension ImageRepository {
    /// How many first bytes a probe asks for: enough for every format's dimensions (JPEG's SOF after an EXIF block
    /// with a thumbnail, which is at most 64 KiB by the APP1 length field; PNG's IHDR, GIF's screen descriptor and
    /// WebP's VP8/VP8L/VP8X header in the first 30 bytes; AVIF/HEIF `ispe` in the `meta` box at the start) and small
    /// enough that a stat of a large image costs one round trip and 64 KiB.
    public static let probeBytes = 64 << 10

    /// Whether a new transfer for a stat or a lookup is a probe: not under `cache-only`, not through the shared tier
    /// (whose stored bodies are whole), not for read-ahead or prefetching (which want the whole image).
    func probes(_ priority: FetchPriority) -> Bool {
        priority == .waited && configuration.policy != .cacheOnly && configuration.sharedTier == nil
    }

    /// What the repository does for the probe `download` (called before its transfer starts): continues it when
    /// someone wants the rest (counted as a running transfer again), keeps at most ``ProbedDownloads/limit`` probes,
    /// and announces a new body that replaced the probed one (the kernel drops the size it was told).
    func installProbe(_ download: Download, fetcher: any ImageFetching) {
        download.install(
            Download.ProbeHandlers(
                continueAfter: { [diskWrites] download, head, offset in
                    diskWrites.transferStarted()
                    var request = FetchRequest(url: download.url, priority: .waited)
                    request.rules = download.rules
                    request.continuedHead = head
                    request.continuedFrom = offset
                    return fetcher.start(request, observer: download)
                },
                probed: { [weak self, weak download] in
                    guard let self, let download else { return }
                    diskWrites.transferEnded()
                    for old in probed.note(download) {
                        diskWrites.transferStarted()
                        if !old.dropProbe() { diskWrites.transferEnded() }
                    }
                },
                replaced: { [contentChanges, url = download.url] readsWaiting in
                    // With reads waiting, not on the fetch thread: the kernel's invalidation waits for the pages those
                    // reads hold locked, and they wait for the bytes this thread delivers.
                    guard readsWaiting else { return contentChanges.announce(url) }
                    DispatchQueue.global().async { contentChanges.announce(url) }
                }))
    }
}

// MARK: - What a probe tells, in one call

extension ImageRepository {
    /// The image's size, validators, type and first bytes (``ProbedImage``): from a cached copy (memory or disk,
    /// expired or not: nothing is revalidated), from a transfer under way, or else from a new probe of its first bytes
    /// (``probeBytes``), which an open later continues. Reading the first bytes this way does not count as a reader's:
    /// an image that changes before an open is still read whole in its new version. Replies once, without locks held.
    public func probe(
        _ url: ImageURL, interest: Interest? = nil,
        reply: @escaping @Sendable (Result<ProbedImage, FetchError>) -> Void
    ) {
        probe(url, interest: interest, attempts: 2, reply: reply)
    }

    private func probe(
        _ url: ImageURL, interest: Interest?, attempts: Int,
        reply: @escaping @Sendable (Result<ProbedImage, FetchError>) -> Void
    ) {
        resolve(url, refresh: false, interest: interest, start: .probe) { [self] result in
            let source: ImageSource
            switch result {
            case .failure(let error): return reply(.failure(error))
            case .success(let resolved): source = resolved
            }
            ImageSource.answer(result, interest: interest) { [self] found in
                let metadata: ImageMetadata
                switch found {
                case .failure(let error): return reply(.failure(error))
                case .success(let found): metadata = found.metadata
                }
                firstBytes(of: source, url, count: min(metadata.size, Self.probeBytes), interest: interest) { bytes in
                    switch bytes {
                    case .failure(let error):
                        reply(.failure(error))
                    case .success(let bytes):
                        // A probe's continuation may have found a new version since the metadata was told: ask again.
                        if case .download(let download) = source, let now = download.currentMetadata,
                            !Self.sameVersion(now, metadata)
                        {
                            guard attempts > 1 else {
                                return reply(.failure(.changed("it changed while its first bytes were read")))
                            }
                            return self.probe(url, interest: interest, attempts: attempts - 1, reply: reply)
                        }
                        reply(.success(ProbedImage(metadata: metadata, firstBytes: bytes)))
                    }
                }
            }
        }
    }

    /// The first `count` bytes of `source`, once they are there.
    private func firstBytes(
        of source: ImageSource, _ url: ImageURL, count: Int, interest: Interest?,
        reply: @escaping @Sendable (Result<[UInt8], FetchError>) -> Void
    ) {
        let copy: @Sendable (Result<ImageSlice, FetchError>) -> Void = { slice in
            reply(slice.map { slice in slice.withSegments { $0.flatMap { Array($0) } } })
        }
        switch source {
        case .download(let download):
            download.read(offset: 0, count: count, interest: interest, servesReader: false, copy)
        case .memory(let image):
            copy(.success(ImageSlice(image.bytes, size: image.metadata.size, offset: 0, count: count)))
        case .disk(let record):
            readFromDisk(url, record, offset: 0, count: count, reply: copy)
        }
    }

    private static func sameVersion(_ first: ImageMetadata, _ second: ImageMetadata) -> Bool {
        first.size == second.size && first.etag == second.etag && first.lastModified == second.lastModified
    }
}
