import ImgfsModel

/// How many file handles are open on a URL's image, as the filesystem counts them: installed by the filesystem,
/// asked by the parts below it (the repository, read-ahead) that must not call off a transfer someone has open.
///
/// Guarantees: thread safe; 0 for every URL until a count is installed.
package final class OpenHandleCounter: Sendable {
    private let count = LockedCallback<ImageURL, Int>()

    package init() {}

    /// Installs what counts the handles (replacing the one before).
    package func install(_ count: @escaping @Sendable (ImageURL) -> Int) {
        self.count.install(count)
    }

    /// The handles open on `url`'s image now.
    package func callAsFunction(_ url: ImageURL) -> Int {
        count(url) ?? 0
    }
}
