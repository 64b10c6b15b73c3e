import Glibc
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// Warms a mount's cache for one URL by reading the URL's file through the mount, as any program would: the first
/// read fetches, verifies and caches the image, so later readers get it from memory or disk.
///
/// The path is chosen as `imgfs path --mount` chooses it (``ImagePath/form(for:mountPointLength:)``). A URL too long
/// for any path is first registered under its digest name (``MountPoint/register(chunks:in:)``). Everything here
/// blocks; call it from a thread of your own.
struct CacheWarmer: Sendable {
    /// The absolute path of the mount.
    let mountPoint: String
    /// Bytes read at a time.
    static let chunkSize = 256 * 1024

    /// Reads the whole file of `text` into `buffer` (at least ``chunkSize`` bytes) and discards it, calling `sized`
    /// with the file's size once it is known (from the response head, or the cached image) and `progress` with the
    /// size of every chunk read; returns the number of bytes read.
    func warm(
        _ text: String, buffer: UnsafeMutableRawBufferPointer,
        sized: (Int) -> Void = { _ in }, progress: (Int) -> Void
    ) -> Result<Int, PrefetchError> {
        let url: ImageURL
        do {
            url = try ImageURL(text)
        } catch {
            return .failure(.invalidURL(error))
        }
        // Read under the background mark: the transfer waits behind what readers and read-ahead want.
        let form = ImagePath.form(for: url.markedBackground, mountPointLength: mountPoint.utf8.count)
        if case .digest(_, let chunks) = form, let failure = MountPoint.register(chunks: chunks, in: mountPoint) {
            return .failure(.system(failure.errno))
        }
        let result = read("\(mountPoint)/\(form.relativePath)", into: buffer, sized: sized, progress: progress)
        // The errno alone says little ("Input/output error"): the daemon remembers why (what `imgfs why` prints).
        if case .failure(.system(let code)) = result,
            let reason = MountControl.get(ImageFilesystem.errorByKeyPrefix + url.cacheKey, on: "\(mountPoint)/.imgfs")
        {
            return .failure(.daemon(code, reason))
        }
        return result
    }

    /// Reads `path` to its end; the number of bytes, or the errno of the call that failed.
    private func read(
        _ path: String, into buffer: UnsafeMutableRawBufferPointer,
        sized: (Int) -> Void, progress: (Int) -> Void
    ) -> Result<Int, PrefetchError> {
        var descriptor: Int32
        repeat { descriptor = open(path, O_RDONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { return .failure(.system(errno)) }
        defer { close(descriptor) }
        // The size is the response's Content-Length (fstat waits for the head, or for the whole body without one).
        var status = stat()
        if fstat(descriptor, &status) == 0 { sized(Int(status.st_size)) }
        var total = 0
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, min(buffer.count, Self.chunkSize))
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return .failure(.system(errno)) }
            if count == 0 { return .success(total) }
            total += count
            progress(count)
        }
    }
}
