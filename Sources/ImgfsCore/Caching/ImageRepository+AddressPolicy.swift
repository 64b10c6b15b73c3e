import Foundation

// MARK: - The address policy applied to cached images

extension ImageRepository {
    /// A URL the address policy refuses: remembered as its last error (for `imgfs why`), logged, not fetched.
    func refused(_ key: String, _ url: ImageURL, _ refusal: String) -> FetchError {
        let error = FetchError.refused(refusal)
        if state.withLock({ $0.failures.setLastError(error, forKey: key) }) {
            logger.warning("refused: \(refusal); neither fetched nor served from the cache",
                           metadata: ["url": "\(url)"])
        }
        return error
    }

    /// Why a cached copy must not be served under `--deny-private-networks`: the address it came from is private.
    func addressRefusal(_ source: Source) -> String? {
        guard configuration.addressPolicy.denyPrivateNetworks else { return nil }
        return source.remoteAddress.flatMap { configuration.addressPolicy.refusal(numericAddress: $0) }
    }
}
