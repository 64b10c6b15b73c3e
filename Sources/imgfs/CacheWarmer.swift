import Glibc
import ImgfsCore

/// Warms a mount's cache for one URL by reading the URL's file through the mount, as any program would: the first
/// read fetches, verifies and caches the image, so later readers get it from memory or disk.
///
/// The path is chosen as `imgfs path --mount` chooses it (``ImagePath/form(for:mountPointLength:)``). A URL too long
/// for any path is first registered under its digest name by looking up its chunked name one directory at a time
/// with `openat`: no path limit applies, no file is opened, and (unlike changing the working directory) it is safe
/// while other threads read. Everything here blocks; call it from a thread of your own.
struct CacheWarmer: Sendable {
    /// The absolute path of the mount.
    let mountPoint: String
    /// Bytes read at a time.
    static let chunkSize = 256 * 1024
    /// `O_PATH` (Linux, on every architecture Swift supports), which the Glibc module does not import: open for
    /// path walks only, so that the kernel looks the name up without opening anything in the filesystem.
    private static let pathOnly: Int32 = 0o10_000_000

    /// Reads the whole file of `text` into `buffer` (at least ``chunkSize`` bytes) and discards it, calling
    /// `progress` with the size of every chunk read; returns the file's size.
    func warm(_ text: String, buffer: UnsafeMutableRawBufferPointer,
              progress: (Int) -> Void) -> Result<Int, PrefetchError> {
        let url: ImageURL
        do {
            url = try ImageURL(text)
        } catch {
            return .failure(.invalidURL(error))
        }
        let form = ImagePath.form(for: url, mountPointLength: mountPoint.utf8.count)
        if case .digest(_, let chunks) = form, let code = register(chunks: chunks) {
            return .failure(.system(code))
        }
        return read("\(mountPoint)/\(form.relativePath)", into: buffer, progress: progress)
    }

    /// Looks up the chunked name `chunks` under `img/+/`, which teaches the mount the URL's digest name; returns the
    /// errno of the step that failed, or nil.
    private func register(chunks: [String]) -> Int32? {
        var directory = open("\(mountPoint)/\(ImagePath.imagesDirectory)/\(ImagePath.chunkDirectory)",
                             Self.pathOnly | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return errno }
        defer { close(directory) }
        for chunk in chunks.dropLast() {
            let next = openat(directory, chunk, Self.pathOnly | O_DIRECTORY | O_CLOEXEC)
            guard next >= 0 else { return errno }
            close(directory)
            directory = next
        }
        let last = openat(directory, chunks.last ?? "", Self.pathOnly | O_CLOEXEC)
        guard last >= 0 else { return errno }
        close(last)
        return nil
    }

    /// Reads `path` to its end; the number of bytes, or the errno of the call that failed.
    private func read(_ path: String, into buffer: UnsafeMutableRawBufferPointer,
                      progress: (Int) -> Void) -> Result<Int, PrefetchError> {
        var descriptor: Int32
        repeat { descriptor = open(path, O_RDONLY | O_CLOEXEC) } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else { return .failure(.system(errno)) }
        defer { close(descriptor) }
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
