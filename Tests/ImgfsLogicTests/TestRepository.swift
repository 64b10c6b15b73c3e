import Foundation
import ImgfsModel
import ImgfsPipeline
import ImgfsStore
import ImgfsWorkers

extension ImageRepository {
    /// The repository the unit tests drive: `fetcher`, a 1 MiB memory cache, no disk cache, bodies not required to
    /// start like an image; `adjust` changes anything else of the configuration.
    static func forTests(
        fetcher: any ImageFetching, now: @escaping @Sendable () -> Date = { Date() },
        adjust: (inout Configuration) -> Void = { _ in }
    ) -> ImageRepository {
        var configuration = Configuration()
        configuration.limits.requireImage = false
        adjust(&configuration)
        return ImageRepository(
            fetcher: fetcher, memory: MemoryCache(budget: 1 << 20), disk: nil, configuration: configuration,
            logger: .init(label: "test"), now: now)
    }
}

extension VariantStore {
    /// A store over ``ImageRepository/forTests(fetcher:now:adjust:)`` with `maker`, a 1 MiB memory cache (so a decode
    /// budget of 1 MiB), `disk`, and 2 workers.
    static func forTests(
        fetcher: any ImageFetching, maker: any VariantMaking, disk: (any DiskCaching)? = nil
    ) -> VariantStore {
        VariantStore(
            repository: .forTests(fetcher: fetcher), maker: maker, memory: MemoryCache(budget: 1 << 20), disk: disk,
            workers: WorkerPool(name: "imgfs-variant", threads: 2), configuration: VariantStore.Configuration(),
            logger: .init(label: "test")
        )
    }
}
