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
