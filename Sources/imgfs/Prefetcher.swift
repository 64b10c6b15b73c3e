import Foundation
import Synchronization

/// Runs an `imgfs prefetch` batch: `concurrency` threads of their own (reads through the mount block, so they do not
/// belong on Swift concurrency's small cooperative pool) take the next URL of the list until none is left, while
/// the calling thread redraws the progress line about ten times a second.
final class Prefetcher: Sendable {
    /// The URLs, in the order of the list.
    let urls: [String]
    /// What reads each URL through the mount.
    let warmer: CacheWarmer
    /// The running count.
    let tally: PrefetchTally
    private let next = Atomic<Int>(0)

    /// Seconds between two draws of the progress line.
    static let redrawInterval = 0.1
    /// The stack of each reader thread (they need little).
    static let threadStackSize = 512 * 1024

    init(urls: [String], mountPoint: String) {
        self.urls = urls
        warmer = CacheWarmer(mountPoint: mountPoint)
        tally = PrefetchTally(total: urls.count)
    }

    /// Reads every URL with `concurrency` threads and returns when all have finished, drawing on `progress` (when
    /// given) meanwhile.
    func run(concurrency: Int, progress: TerminalProgress?) {
        let group = DispatchGroup()
        for index in 0..<min(max(concurrency, 1), urls.count) {
            group.enter()
            let thread = Thread { [self] in
                work()
                group.leave()
            }
            thread.name = "imgfs-prefetch-\(index)"
            thread.stackSize = Self.threadStackSize
            thread.start()
        }
        guard let progress else {
            group.wait()
            return
        }
        progress.draw(tally.snapshot())
        while group.wait(timeout: .now() + Self.redrawInterval) == .timedOut {
            progress.draw(tally.snapshot())
        }
        progress.clear()
    }

    /// One thread's loop: takes the next URL until the list is exhausted.
    private func work() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: CacheWarmer.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
            guard index < urls.count else { return }
            let result = warmer.warm(
                urls[index], buffer: buffer, sized: { tally.sized(index: index, bytes: $0) },
                progress: { tally.add(index: index, bytes: $0) })
            if case .failure(let error) = result {
                tally.finish(index: index, url: urls[index], error: error)
            } else {
                tally.finish(index: index, url: urls[index], error: nil)
            }
        }
    }
}
