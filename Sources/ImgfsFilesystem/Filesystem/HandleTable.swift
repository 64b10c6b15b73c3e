import ImgfsModel
import ImgfsPipeline

/// The files the kernel has open, by the 64-bit handle their OPEN answered with: images (``OpenImage``) and snapshots
/// of generated files (statistics, a placeholder). It is the one count of open files per image that the parts below
/// the filesystem ask (``OpenHandleCounter``: a transfer someone has open is never called off).
///
/// Guarantees: thread safe; handles are never 0 and never reused while the mount lives; an image's count is the number
/// of its handles not yet released, counted by URL without fragment (one transfer serves them all).
final class HandleTable: Sendable {
    /// What one handle reads.
    enum File: Sendable {
        case image(OpenImage)
        case bytes(ImageBytes)
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: File] = [:]
        var openImages: [String: Int] = [:]
    }

    private let state = Locked(State())

    /// Registers an open file: its handle, and how many handles its image has open now (with this one).
    func open(_ file: File) -> (handle: UInt64, opens: Int) {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.files[handle] = file
            guard case .image(let image) = file else { return (handle, 0) }
            state.openImages[image.url.cacheKey, default: 0] += 1
            return (handle, state.openImages[image.url.cacheKey]!)
        }
    }

    /// The file open with `handle`, if it is.
    subscript(handle: UInt64) -> File? {
        state.withLock { $0.files[handle] }
    }

    /// Releases `handle`: its file, and for an image how many handles it still has open.
    func release(_ handle: UInt64) -> (file: File, opensLeft: Int)? {
        state.withLock { state in
            guard let file = state.files.removeValue(forKey: handle) else { return nil }
            guard case .image(let image) = file else { return (file, 0) }
            let key = image.url.cacheKey
            let left = max(0, (state.openImages[key] ?? 0) - 1)
            state.openImages[key] = left == 0 ? nil : left
            return (file, left)
        }
    }

    /// How many handles are open on `url`'s image.
    func opens(_ url: ImageURL) -> Int {
        state.withLock { $0.openImages[url.cacheKey] ?? 0 }
    }
}
