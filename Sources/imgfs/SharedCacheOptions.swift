import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsRedis
import Logging

/// The shared-tier options of `imgfs mount`: `--shared-cache` and its secrets (its limits are `--tune` keys).
struct SharedCacheOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A Redis server the mounts of a fleet share as a cache tier between disk and origin.",
            valueName: "redis://[:password@]host:port[/db]"))
    var sharedCache: String?

    @Option(help: "A file holding the Redis password (instead of putting it in --shared-cache).")
    var sharedCachePasswordFile: String?

    @Option(
        help: ArgumentHelp(
            "A file holding the fleet's secret key (at least 16 bytes, mode 600): every value in Redis is sealed with"
                + " it (HMAC-SHA-256) and values that are not are ignored. Without it, Redis is trusted as it is."))
    var sharedCacheKeyFile: String?

    func validate() throws {
        guard let sharedCache else {
            if sharedCachePasswordFile != nil {
                throw ValidationError("--shared-cache-password-file needs --shared-cache")
            }
            if sharedCacheKeyFile != nil { throw ValidationError("--shared-cache-key-file needs --shared-cache") }
            return
        }
        _ = try address(sharedCache)
        _ = try fleetKey()
    }

    /// The shared tier in front of `origin`, or nil without `--shared-cache`.
    func tier(
        origin: any ImageFetching, addressPolicy: AddressPolicy, requireImage: Bool, tuning: Tuning,
        expiry: ExpiryPolicy, logger: Logger
    ) throws -> SharedTierFetcher? {
        guard let sharedCache else { return nil }
        let address = try address(sharedCache)
        var configuration = SharedTierConfiguration()
        configuration.maxSize = tuning.sharedMaxSize
        configuration.leaseDuration = tuning.sharedLease
        configuration.expiry = expiry
        configuration.addressPolicy = addressPolicy
        configuration.waitLimit = tuning.timeout
        configuration.requireImage = requireImage
        configuration.seal = SharedTierSeal(key: try fleetKey())
        if !configuration.seal.isKeyed {
            logger.warning(
                """
                shared cache: no --shared-cache-key-file, so its values are trusted as they are: anyone who can \
                write to this Redis can replace images for every mount
                """)
        }
        let store = RedisStore(address: address, timeout: tuning.sharedTimeout)
        do {
            try store.ping()
            logger.notice("shared cache: \(address)")
        } catch {
            logger.warning("shared cache \(address) does not answer (\(error)); fetching from the origin until it does")
        }
        return SharedTierFetcher(
            origin: origin, store: store, configuration: configuration, logger: logger,
            resolve: { HostResolver.addresses(of: $0) })
    }

    /// The bytes of `--shared-cache-key-file` (surrounding white space removed), or none without it. Refused: a file
    /// that cannot be read, one that group or others may read or write (the key would not be secret), and a key
    /// shorter than 16 bytes (it could be guessed).
    private func fleetKey() throws -> [UInt8] {
        guard let path = sharedCacheKeyFile else { return [] }
        var status = stat()
        guard stat(path, &status) == 0, let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--shared-cache-key-file: cannot read \(path)")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw ValidationError(
                "--shared-cache-key-file: \(path) is open to group or others (mode "
                    + "\(String(status.st_mode & 0o777, radix: 8))); make it private: chmod 600 \(path)")
        }
        let key = Array(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        guard key.count >= 16 else {
            throw ValidationError("--shared-cache-key-file: \(path) holds \(key.count) bytes; a key needs at least 16")
        }
        return key
    }

    private func address(_ text: String) throws -> SharedCacheAddress {
        var address: SharedCacheAddress
        do {
            address = try SharedCacheAddress(parsing: text)
        } catch {
            throw ValidationError("--shared-cache: \(error)")
        }
        if let sharedCachePasswordFile {
            guard let data = FileManager.default.contents(atPath: sharedCachePasswordFile) else {
                throw ValidationError("--shared-cache-password-file: cannot read \(sharedCachePasswordFile)")
            }
            address.password = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return address
    }
}
