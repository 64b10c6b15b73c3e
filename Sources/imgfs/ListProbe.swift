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

    /// Probes `count` files in turn, `concurrency` at once, with a progress line on a terminal: `file(index)` gives
    /// the path of the index-th and, when its type is wanted, the key it is returned under. Memory stays flat
    /// whatever `count`: only the types found are kept.
    func probe(count: Int, file: @escaping @Sendable (Int) -> (path: String, typeKey: String?)) -> [String: String] {
        guard count > 0 else { return [:] }
        let progress = TerminalProgress.standardError()
        defer { progress?.clear() }
        let state = Locked<(next: Int, done: Int, found: [String: String])>((0, 0, [:]))
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: min(concurrency, count)) { _ in
            while let index = state.withLock({ state -> Int? in
                defer { state.next += 1 }
                return state.next < count ? state.next : nil
            }) {
                let (path, key) = file(index)
                let type = probe(path, typeWanted: key != nil)
                let done = state.withLock { state -> Int in
                    if let key, let type { state.found[key] = type }
                    state.done += 1
                    return state.done
                }
                progress?.draw(ProgressLine(total: count, done: done, seconds: Date().timeIntervalSince(start)))
            }
        }
        return state.withLock { $0.found }
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

    /// Stats `file`; with `typeWanted`, returns the extension of its type.
    private func probe(_ file: String, typeWanted: Bool) -> String? {
        var status = stat()
        guard stat(file, &status) == 0, typeWanted else { return nil }
        return MountControl.get("user.imgfs.content_type", on: file).flatMap(ImageExtension.forContentType)
    }
}
