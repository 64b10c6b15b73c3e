import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsVips
import ImgfsWorkers
import Logging

/// The thumbnail option of `imgfs mount` (`--thumb-sizes`), and the wiring of `thumb/`.
struct ThumbnailOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The sizes under thumb/ (longest side in pixels), separated by commas (or colons, in -o);"
                + " others are ENOENT.", valueName: "sizes"))
    var thumbSizes = "64,128,256,512,1024"

    func validate() throws {
        _ = try sizes()
    }

    func sizes() throws -> [Int] {
        let sizes = thumbSizes.split(whereSeparator: { $0 == "," || $0 == ":" }).map {
            Int($0.trimmingCharacters(in: .whitespaces))
        }
        guard !sizes.isEmpty, sizes.allSatisfy({ ($0 ?? 0) > 0 && ($0 ?? 0) <= 16384 }) else {
            throw ValidationError("--thumb-sizes: comma-separated sizes from 1 to 16384 pixels, e.g. 64,256")
        }
        return Array(Set(sizes.compactMap { $0 })).sorted()
    }

    /// The variants' part of `--disk-limit` (an eighth): the images' disk cache has the rest.
    static func diskShare(of diskBudget: Int) -> Int { diskBudget / 8 }

    /// The variant store: libvips on `thumb-workers` threads; its own memory cache (an eighth of the images'
    /// budget, in addition to it) and disk cache (`<cache-dir>/variants`, ``diskShare(of:)`` of the disk limit).
    /// With `cacheDirectory` nil (`--disk-limit 0`) variants are kept in memory only. Their disk entries expire by
    /// `expiry` as images do (a variant's record has its original's fetch time and expiry).
    func makeStore(
        repository: ImageRepository, cacheDirectory: URL?, memoryBudget: Int, diskBudget: Int,
        expiry: ExpiryPolicy, tuning: Tuning, logger: Logger
    ) throws -> VariantStore {
        var configuration = VariantStore.Configuration()
        configuration.sizes = try sizes()
        configuration.maximumPixels = tuning.maxPixels
        let disk = try cacheDirectory.map {
            try DiskCache(
                directory: $0.appendingPathComponent("variants"), sizeLimit: Self.diskShare(of: diskBudget),
                logger: logger, expiry: { expiry.expiry(of: $0) })
        }
        let workers = WorkerPool(name: "imgfs-variant", threads: tuning.thumbWorkers)
        return VariantStore(
            repository: repository, maker: try VipsThumbnailer(),
            memory: MemoryCache(budget: memoryBudget / 8), disk: disk, workers: workers,
            configuration: configuration, logger: logger)
    }
}
