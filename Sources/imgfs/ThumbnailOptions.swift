import ArgumentParser
import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsVips
import ImgfsWorkers
import Logging

/// The thumbnail option of `imgfs mount` (`--thumb-sizes`), and the wiring of `thumb/` and `fmt/`.
struct ThumbnailOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The sizes under thumb/: longest side in pixels (256), or an exact size (224x224: scaled to cover,"
                + " cropped), separated by commas (or colons, in -o); others are ENOENT. (fmt/jpeg/ and fmt/png/"
                + " hold whole images converted.)", valueName: "sizes"))
    var thumbSizes = "64,128,256,512,1024"

    func validate() throws {
        _ = try shapes()
    }

    /// The sizes and exact sizes, each once, sizes first in increasing order.
    func shapes() throws -> [VariantKind.Shape] {
        let shapes = thumbSizes.split(whereSeparator: { $0 == "," || $0 == ":" }).map {
            VariantKind.Shape($0.trimmingCharacters(in: .whitespaces))
        }
        guard !shapes.isEmpty, shapes.allSatisfy({ $0 != nil && $0 != .whole }) else {
            throw ValidationError(
                "--thumb-sizes: comma-separated sizes (longest side) or exact sizes (WxH) from 1 to 16384 pixels,"
                    + " e.g. 64,256,224x224")
        }
        var unique: [VariantKind.Shape] = []
        for shape in shapes.compactMap({ $0 }) where !unique.contains(shape) { unique.append(shape) }
        let sizes = unique.compactMap { if case .fit(let side) = $0 { side } else { nil } }.sorted()
        return sizes.map { .fit($0) } + unique.filter { if case .fit = $0 { false } else { true } }
    }

    /// The variants' part of `--disk-limit` (an eighth): the images' disk cache has the rest.
    static func diskShare(of diskBudget: Int) -> Int { diskBudget / 8 }

    /// The variant store (`thumb/` and `fmt/`): libvips on `thumb-workers` threads; its own memory cache (an eighth of
    /// the images' budget, in addition to it) and disk cache (`<cache-dir>/variants`, ``diskShare(of:)`` of the disk
    /// limit). With `cacheDirectory` nil (`--disk-limit 0`) variants are kept in memory only. Their disk entries expire
    /// by `expiry` as images do (a variant's record has its original's fetch time and expiry).
    func makeStore(
        repository: ImageRepository, cacheDirectory: URL?, memoryBudget: Int, diskBudget: Int,
        expiry: ExpiryPolicy, tuning: Tuning, logger: Logger
    ) throws -> VariantStore {
        var configuration = VariantStore.Configuration()
        let shapes = try shapes()
        configuration.sizes = shapes.compactMap { if case .fit(let side) = $0 { side } else { nil } }
        configuration.exactSizes = shapes.filter { if case .cover = $0 { true } else { false } }
        configuration.crop = tuning.thumbCrop
        configuration.maximumPixels = tuning.maxPixels
        let disk = try cacheDirectory.map {
            try DiskCache(
                directory: $0.appendingPathComponent("variants"), sizeLimit: Self.diskShare(of: diskBudget),
                logger: logger, expiry: { expiry.expiry(of: $0) })
        }
        let workers = WorkerPool(name: "imgfs-variant", threads: tuning.thumbWorkers)
        return VariantStore(
            repository: repository, maker: VipsThumbnailer(),
            memory: MemoryCache(budget: memoryBudget / 8), disk: disk, workers: workers,
            configuration: configuration, logger: logger)
    }
}
