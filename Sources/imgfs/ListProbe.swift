import Foundation
import Glibc
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// Probes URLs through a running mount: a `stat` of a list entry's file costs an uncached image a request for its
/// first 64 KiB (its size and type); the type is then its `user.imgfs.content_type`. Runs `concurrency` probes at
/// once and shows a progress line on a terminal.
struct ListProbe {
    let mountPoint: String
    let concurrency: Int

    /// The extensions of the URLs whose type the mount has cached, asked of `.imgfs/` without a fetch (`concurrency`
    /// at once, no progress line: nothing waits for the network).
    func knownExtensions(for urls: [ImageURL]) -> [ImageURL: String] {
        concurrently(urls, progress: nil) { url in
            MountControl.get(ImageFilesystem.contentTypeByKeyPrefix + url.cacheKey, on: "\(mountPoint)/.imgfs")
                .flatMap(ImageExtension.forContentType)
        }
    }

    /// Probes each of `urls` through its file (`path`; none: not probed) with a progress line on a terminal; returns
    /// the extensions found.
    func extensions(for urls: [ImageURL], path: @escaping @Sendable (ImageURL) -> String?) -> [ImageURL: String] {
        let progress = TerminalProgress.standardError()
        defer { progress?.clear() }
        return concurrently(urls, progress: progress) { url in path(url).flatMap(probe) }
    }

    /// `find` of each of `urls` (once per distinct URL), `concurrency` at once.
    private func concurrently(
        _ urls: [ImageURL], progress: TerminalProgress?, _ find: @Sendable (ImageURL) -> String?
    ) -> [ImageURL: String] {
        let unique = Array(Set(urls))
        guard !unique.isEmpty else { return [:] }
        let found = Locked<(next: Int, done: Int, found: [ImageURL: String])>((0, 0, [:]))
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: min(concurrency, unique.count)) { _ in
            while let index = found.withLock({ state -> Int? in
                defer { state.next += 1 }
                return state.next < unique.count ? state.next : nil
            }) {
                let type = find(unique[index])
                let done = found.withLock { state -> Int in
                    if let type { state.found[unique[index]] = type }
                    state.done += 1
                    return state.done
                }
                progress?.draw(ProgressLine(total: unique.count, done: done, seconds: Date().timeIntervalSince(start)))
            }
        }
        return found.withLock { $0.found }
    }

    private func probe(_ file: String) -> String? {
        var status = stat()
        guard stat(file, &status) == 0 else { return nil }
        return MountControl.get("user.imgfs.content_type", on: file).flatMap(ImageExtension.forContentType)
    }
}
